/* ONNX backend node-test conformance (suite 'onnx_node'): every case of
 * ONNX's own node tests (libonnx-testdata, /usr/share/libonnx-testdata/
 * data/node/<case>/{model.onnx, test_data_set_N/{input,output}_*.pb}) is
 * loaded with clf_onnx_load_file, compiled for the default device (PoCL in
 * CI) with fusion on and with fusion off, run with clf_run_host on every
 * data set, and each output is compared with output_*.pb: shape exactly,
 * integers and bools exactly, floats within atol 1e-5 + rtol 1e-4 (NaN
 * matches NaN, infinities match exactly).
 *
 * One line per case goes to stdout and to $CLFUSE_ONNX_NODE_RESULTS (meson
 * points it at the build dir's tests/onnx_node_results.txt):
 *
 *     PASS <case>
 *     FAIL <case>: <why>
 *     SKIP <case>: <reason>
 *
 * then "onnx_node: N passed, N failed, N skipped of M". The test fails if
 * any case fails. Classification:
 *
 * - A case whose nodes are all ops libclfuse claims (claimed_ops below: the
 *   README's list of ONNX ops, and those being added) must load; a load
 *   failure is a FAIL, except CLF_ERR_UNSUPPORTED for something other than
 *   a claimed op itself (a dtype, an attribute value, an old opset's form,
 *   an optional output): that is a SKIP with the library's message. "op X
 *   is not supported" for a claimed X is a FAIL, and so is any other
 *   status (CLF_ERR_MODEL, CLF_ERR_SHAPE, ...).
 * - A case with an op libclfuse does not claim (or of another domain) that
 *   fails to load is a SKIP; the reason is the library's message when it
 *   is CLF_ERR_UNSUPPORTED, else the unclaimed ops and the load error.
 * - A case with an input or output declared in a dtype libclfuse does not
 *   compute (float16, double, uint8, string, ...; sequences, maps,
 *   optionals) that fails to load is a SKIP naming that dtype.
 * - A case refused because an input must be a constant (a shape, axes,
 *   split sizes, Trilu's k, Range's bounds given as graph inputs) is loaded
 *   again with those inputs made initializers holding the data set's values
 *   and held to its outputs like any other ("PASS <case>: with input(s)
 *   ... bound as constants"); it is a SKIP only when the value is computed
 *   in the graph or the bound model is refused as unsupported too.
 * - A model that loads is held to its outputs, whatever its ops: a compile
 *   or run error or a wrong value is a FAIL.
 *
 * Cost: PoCL builds a kernel in about half a second, so all cases run in
 * one Check test (one forked child, one context, one CLFUSE_CACHE_DIR, so
 * that identical kernels of different cases build once). The wall time is
 * printed with the summary. A crash in the library ends the run: the case
 * it crashed in is written as a FAIL before the signal is raised again.
 *
 * Environment: CLFUSE_ONNX_NODE_DIR (another data/node folder),
 * CLFUSE_ONNX_NODE_FILTER (only cases whose name contains it),
 * CLFUSE_ONNX_NODE_RESULTS (the results file), CLFUSE_ONNX_NODE_UNFUSED_MAX
 * (the unfused variant is compiled only for models of at most that many
 * nodes; default: all), CLFUSE_ONNX_NODE_VERBOSE=1 (each case's time, node
 * count and ops on stderr). */
#define _XOPEN_SOURCE 700 /* scandir, alphasort, strdup, clock_gettime */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "onnx.pb-c.h"
#include "test_support.h"

#define DEFAULT_NODE_DIR "/usr/share/libonnx-testdata/data/node"
#define MAX_IO 32
#define RTOL 1e-4
#define ATOL 1e-5

/* ONNX ops (default domain) libclfuse claims to import: README.md's list
 * ("ONNX models": Ops). A case of these whose load fails is a failure. */
static const char *const claimed_ops[] = {
    /* README.md, "ONNX models": Ops */
    "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean", "Equal", "Less", "LessOrEqual", "Greater",
    "GreaterOrEqual", "And", "Or", "Not", "Neg", "Abs", "Exp", "Log", "Sqrt", "Reciprocal", "Sin", "Cos", "Tanh",
    "Sigmoid", "Relu", "Gelu", "Erf", "Floor", "Ceil", "Sign", "Where", "Clip", "Cast", "CastLike", "Identity",
    "Dropout", "Reshape", "Transpose", "Expand", "Slice", "Squeeze", "Unsqueeze", "Shape", "Constant", "ReduceSum",
    "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare", "ReduceL1", "ReduceL2",
    "ReduceLogSum", "ReduceLogSumExp", "ArgMax", "ArgMin", "Softmax", "LogSoftmax", "LayerNormalization",
    "RMSNormalization", "MatMul", "Gemm", "Gather", "GatherElements", "GatherND", "Concat", "Split",
    "ConstantOfShape", "Range", "Size", "Trilu", "IsNaN", "Flatten",
};

static int claimed(const char *domain, const char *op)
{
    if (domain && domain[0] && strcmp(domain, "ai.onnx"))
        return 0;
    for (size_t i = 0; i < sizeof claimed_ops / sizeof claimed_ops[0]; i++)
        if (!strcmp(op, claimed_ops[i]))
            return 1;
    return 0;
}

/* ---- Small helpers -------------------------------------------------------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The whole file, malloc'd; NULL with errno set when it cannot be read. */
static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    uint8_t *b = malloc(cap);
    for (;;) {
        if (n == cap) {
            uint8_t *nb = realloc(b, cap *= 2);
            if (!nb) {
                free(b);
                fclose(f);
                return NULL;
            }
            b = nb;
        }
        size_t got = fread(b + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    fclose(f);
    *len = n;
    return b;
}

static const char *elem_name(int e)
{
    static const char *const names[] = {"undefined", "float", "uint8", "int8", "uint16", "int16", "int32",
                                        "int64", "string", "bool", "float16", "double", "uint32", "uint64",
                                        "complex64", "complex128", "bfloat16"};
    return e >= 0 && e < (int)(sizeof names / sizeof names[0]) ? names[e] : "an unknown element type";
}

/* Element types this test reads and libclfuse computes. */
static int elem_ok(int e)
{
    return e == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT || e == ONNX__TENSOR_PROTO__DATA_TYPE__INT32 ||
           e == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 || e == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL ||
           e == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16 || e == ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16;
}

/* The element types of data files: those, and uint16, which older ONNX
 * test data uses for bfloat16 bit patterns. */
static int data_elem_ok(int e) { return elem_ok(e) || e == ONNX__TENSOR_PROTO__DATA_TYPE__UINT16; }

static int is_16_bit(int e)
{
    return e == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16 || e == ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16 ||
           e == ONNX__TENSOR_PROTO__DATA_TYPE__UINT16;
}

static void shape_str(char *buf, size_t cap, int rank, const int64_t *shape)
{
    size_t len = (size_t)snprintf(buf, cap, "[");
    for (int d = 0; d < rank && len < cap; d++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%lld", d ? "," : "", (long long)shape[d]);
    if (len < cap)
        snprintf(buf + len, cap - len, "]");
}

/* Cuts msg at its first newline; a build log after it is reduced to its
 * first line that says "error". */
static const char *first_line(char *msg)
{
    char *nl = strchr(msg, '\n');
    if (!nl)
        return msg;
    *nl = 0;
    char *err = strstr(nl + 1, "error");
    if (err) {
        char *start = err;
        while (start > nl + 1 && start[-1] != '\n')
            start--;
        char *end = strchr(err, '\n');
        if (end)
            *end = 0;
        while (*start == ' ' || *start == '\t')
            start++;
        size_t len = strlen(msg);
        memmove(msg + len + 1, start, strlen(start) + 1);
        msg[len] = ' ';
    }
    return msg;
}

/* ---- What the model file says, read here (not through libclfuse) ------------------------------- */

typedef struct case_info {
    size_t nnodes;
    char unclaimed[512];  /* the ops libclfuse does not claim, comma separated ("" when none) */
    char bad_dtype[256];  /* the first input or output of a dtype libclfuse does not compute ("" when none) */
    char ops[512];        /* every op, in order of first use */
    char inputs[MAX_IO][128]; /* the graph inputs that are not initializers, in order */
    size_t ninputs;
} case_info;

static void add_word(char *list, size_t cap, const char *w)
{
    size_t wl = strlen(w), len = strlen(list);
    for (const char *p = list; (p = strstr(p, w)) != NULL; p += wl)
        if ((p == list || p[-1] == ',') && (p[wl] == ',' || p[wl] == 0))
            return;
    if (len + wl + 2 < cap)
        snprintf(list + len, cap - len, "%s%s", len ? "," : "", w);
}

static void check_value_info(case_info *ci, const Onnx__ValueInfoProto *v, const char *kind)
{
    if (ci->bad_dtype[0])
        return;
    const Onnx__TypeProto *t = v->type;
    if (!t || t->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET)
        return; /* undeclared: libclfuse decides */
    if (t->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
        const char *k = t->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE ? "a sequence"
                        : t->value_case == ONNX__TYPE_PROTO__VALUE_MAP_TYPE    ? "a map"
                        : t->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE ? "an optional"
                                                                                 : "a sparse tensor";
        snprintf(ci->bad_dtype, sizeof ci->bad_dtype, "%s '%s' is %s", kind, v->name, k);
        return;
    }
    int e = t->tensor_type && t->tensor_type->has_elem_type ? t->tensor_type->elem_type : 0;
    if (e && !elem_ok(e))
        snprintf(ci->bad_dtype, sizeof ci->bad_dtype, "%s '%s' is %s", kind, v->name, elem_name(e));
}

/* 0 when the model cannot be parsed here (the library will say why). */
static int read_case_info(const char *path, case_info *ci)
{
    memset(ci, 0, sizeof *ci);
    size_t len;
    uint8_t *b = slurp(path, &len);
    if (!b)
        return 0;
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, b);
    free(b);
    if (!m || !m->graph) {
        if (m)
            onnx__model_proto__free_unpacked(m, NULL);
        return 0;
    }
    const Onnx__GraphProto *g = m->graph;
    ci->nnodes = g->n_node;
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        char name[256];
        if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx"))
            snprintf(name, sizeof name, "%s.%s", n->domain, n->op_type);
        else
            snprintf(name, sizeof name, "%s", n->op_type);
        add_word(ci->ops, sizeof ci->ops, name);
        if (!claimed(n->domain, n->op_type))
            add_word(ci->unclaimed, sizeof ci->unclaimed, name);
    }
    for (size_t i = 0; i < g->n_input; i++) {
        int init = 0;
        for (size_t j = 0; j < g->n_initializer && !init; j++)
            init = !strcmp(g->initializer[j]->name, g->input[i]->name);
        if (init)
            continue;
        check_value_info(ci, g->input[i], "input");
        if (ci->ninputs < MAX_IO)
            snprintf(ci->inputs[ci->ninputs++], sizeof ci->inputs[0], "%s", g->input[i]->name);
    }
    for (size_t i = 0; i < g->n_output; i++)
        check_value_info(ci, g->output[i], "output");
    onnx__model_proto__free_unpacked(m, NULL);
    return 1;
}

/* ---- TensorProto files ------------------------------------------------------------------------- */

typedef struct tensor_data {
    char *name;
    int elem;             /* TensorProto.DataType */
    int rank;
    int64_t shape[CLF_MAX_RANK];
    size_t n;
    void *data;           /* n floats, int32s, int64s or bytes (bool), by elem */
} tensor_data;

static void tensor_free(tensor_data *t)
{
    free(t->name);
    free(t->data);
    memset(t, 0, sizeof *t);
}

/* Reads a TensorProto file; 0 with why written when it is not one this
 * test reads. */
static int read_tensor(const char *path, tensor_data *out, char *why, size_t cap)
{
    memset(out, 0, sizeof *out);
    size_t len;
    uint8_t *b = slurp(path, &len);
    if (!b) {
        snprintf(why, cap, "%s: %s", path, strerror(errno));
        return 0;
    }
    Onnx__TensorProto *t = onnx__tensor_proto__unpack(NULL, len, b);
    free(b);
    if (!t) {
        snprintf(why, cap, "%s is not a TensorProto", path);
        return 0;
    }
    int ok = 0;
    int e = t->data_type;
    size_t esz = e == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 ? 8
                 : e == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL ? 1
                 : is_16_bit(e)                            ? 2
                                                           : 4;
    size_t n = 1;
    if (!data_elem_ok(e)) {
        snprintf(why, cap, "%s holds %s", path, elem_name(e));
        goto done;
    }
    if (t->n_dims > CLF_MAX_RANK) {
        snprintf(why, cap, "%s has rank %zu", path, t->n_dims);
        goto done;
    }
    for (size_t d = 0; d < t->n_dims; d++) {
        /* (a file of another message, a SequenceProto, parses too) */
        if (t->dims[d] < 0 || (t->dims[d] > 0 && n > ((size_t)1 << 32) / (size_t)t->dims[d])) {
            snprintf(why, cap, "%s: not a tensor this test reads (dimension %zu is %lld)", path, d,
                     (long long)t->dims[d]);
            goto done;
        }
        out->shape[d] = t->dims[d];
        n *= (size_t)t->dims[d];
    }
    size_t have = t->has_raw_data                                ? t->raw_data.len / esz
                  : e == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT   ? t->n_float_data
                  : e == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 ? t->n_int64_data
                                                              : t->n_int32_data;
    if (have != n || (t->has_raw_data && t->raw_data.len != n * esz)) {
        snprintf(why, cap, "%s: %zu %s for %zu elements", path, t->has_raw_data ? t->raw_data.len : have,
                 t->has_raw_data ? "bytes of raw_data" : "values", n);
        goto done;
    }
    out->rank = (int)t->n_dims;
    out->elem = e;
    out->n = n;
    out->name = strdup(t->name ? t->name : "");
    out->data = calloc(n ? n : 1, esz);
    if (t->has_raw_data) {
        if (n)
            memcpy(out->data, t->raw_data.data, n * esz);
    } else {
        for (size_t i = 0; i < n; i++) {
            if (e == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
                ((float *)out->data)[i] = t->float_data[i];
            else if (e == ONNX__TENSOR_PROTO__DATA_TYPE__INT64)
                ((int64_t *)out->data)[i] = t->int64_data[i];
            else if (e == ONNX__TENSOR_PROTO__DATA_TYPE__INT32)
                ((int32_t *)out->data)[i] = t->int32_data[i];
            else if (is_16_bit(e)) /* bit patterns in int32_data */
                ((uint16_t *)out->data)[i] = (uint16_t)t->int32_data[i];
            else
                ((uint8_t *)out->data)[i] = t->int32_data[i] != 0;
        }
    }
    ok = 1;
done:
    if (!ok)
        tensor_free(out);
    onnx__tensor_proto__free_unpacked(t, NULL);
    return ok;
}

static int count_files(const char *dir, const char *prefix)
{
    int n = 0;
    char path[1400];
    for (;;) {
        struct stat sb;
        snprintf(path, sizeof path, "%s/%s_%d.pb", dir, prefix, n);
        if (stat(path, &sb) != 0)
            return n;
        n++;
    }
}

/* Converts a file's values to what the graph takes: elements of dt.
 * Returns NULL with why written when they cannot be. */
static void *to_graph_dtype(const tensor_data *t, clf_dtype dt, char *why, size_t cap)
{
    size_t n = t->n;
    void *p = calloc(n ? n : 1, clf_dtype_size(dt) ? clf_dtype_size(dt) : 1);
    int e = t->elem;
    if (dt == CLF_F32 && e == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) {
        memcpy(p, t->data, n * 4);
    } else if (dt == CLF_BOOL && e == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL) {
        memcpy(p, t->data, n);
    } else if ((dt == CLF_F16 && e == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16) ||
               (dt == CLF_BF16 && (e == ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16 ||
                                   e == ONNX__TENSOR_PROTO__DATA_TYPE__UINT16))) {
        memcpy(p, t->data, n * 2);
    } else if (dt == CLF_I32 && e == ONNX__TENSOR_PROTO__DATA_TYPE__INT32) {
        memcpy(p, t->data, n * 4);
    } else if (dt == CLF_I64 && e == ONNX__TENSOR_PROTO__DATA_TYPE__INT64) {
        memcpy(p, t->data, n * 8);
    } else if (dt == CLF_I64 && e == ONNX__TENSOR_PROTO__DATA_TYPE__INT32) {
        for (size_t i = 0; i < n; i++)
            ((int64_t *)p)[i] = ((const int32_t *)t->data)[i];
    } else if (dt == CLF_I32 && e == ONNX__TENSOR_PROTO__DATA_TYPE__INT64) {
        for (size_t i = 0; i < n; i++) {
            int64_t v = ((const int64_t *)t->data)[i];
            if (v < INT32_MIN || v > INT32_MAX) {
                snprintf(why, cap, "element %zu (%lld) does not fit the graph's int32", i, (long long)v);
                free(p);
                return NULL;
            }
            ((int32_t *)p)[i] = (int32_t)v;
        }
    } else {
        snprintf(why, cap, "holds %s but the graph takes %s", elem_name(e), clf_dtype_name(dt));
        free(p);
        return NULL;
    }
    return p;
}

/* ---- Results -------------------------------------------------------------------------------- */

static FILE *results;
static int results_fd = -1;
static char current_case[256];
static int npass, nfail, nskip, ncases;
static int verbose;

static void emit(const char *kind, const char *name, const char *fmt, ...)
{
    char why[2048] = "";
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, sizeof why, fmt, ap);
        va_end(ap);
        for (char *c = why; *c; c++) /* one line per case */
            if (*c == '\n' || *c == '\r')
                *c = ' ';
    }
    if (!strcmp(kind, "PASS"))
        npass++;
    else if (!strcmp(kind, "FAIL"))
        nfail++;
    else
        nskip++;
    printf("%s %s%s%s\n", kind, name, fmt ? ": " : "", why);
    fflush(stdout);
    if (results) {
        fprintf(results, "%s %s%s%s\n", kind, name, fmt ? ": " : "", why);
        fflush(results);
    }
}

static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
static struct sigaction prev_action[sizeof crash_signals / sizeof crash_signals[0]];

/* Writes the case that crashed as a FAIL, puts back the handler there was
 * before (a sanitizer's, or the default) and returns: the faulting
 * instruction faults again into it. A signal that was sent (raise, abort,
 * kill) is raised again. */
static void on_crash(int sig, siginfo_t *info, void *uctx)
{
    (void)uctx;
    char line[512];
    int len = snprintf(line, sizeof line, "FAIL %s: crashed with signal %d; the run stops here\n", current_case,
                       sig);
    if (len > 0) {
        if (write(STDOUT_FILENO, line, (size_t)len) < 0) {
        }
        if (results_fd >= 0 && write(results_fd, line, (size_t)len) < 0) {
        }
    }
    for (size_t i = 0; i < sizeof crash_signals / sizeof crash_signals[0]; i++)
        if (crash_signals[i] == sig)
            sigaction(sig, &prev_action[i], NULL);
    if (info->si_code <= 0) /* sent (kill, raise): it would not come again */
        raise(sig);
}

static void catch_crashes(int on)
{
    for (size_t i = 0; i < sizeof crash_signals / sizeof crash_signals[0]; i++) {
        if (on) {
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_sigaction = on_crash;
            sa.sa_flags = SA_SIGINFO;
            sigemptyset(&sa.sa_mask);
            sigaction(crash_signals[i], &sa, &prev_action[i]);
        } else {
            sigaction(crash_signals[i], &prev_action[i], NULL);
        }
    }
}

/* ---- One case ----------------------------------------------------------------------------------- */

typedef struct run_io {
    size_t nin, nout;
    clf_host_binding in[MAX_IO], out[MAX_IO];
    clf_onnx_io out_io[MAX_IO];
    tensor_data want[MAX_IO];
} run_io;

static void run_io_free(run_io *r)
{
    for (size_t i = 0; i < r->nin; i++)
        free(r->in[i].data);
    for (size_t i = 0; i < r->nout; i++) {
        free(r->out[i].data);
        tensor_free(&r->want[i]);
    }
    memset(r, 0, sizeof *r);
}

/* Compares output i of r (as the graph computed it) with its file; 0 with
 * why written on a mismatch. */
static int compare_output(const run_io *r, size_t i, char *why, size_t cap)
{
    const clf_onnx_io *o = &r->out_io[i];
    const tensor_data *w = &r->want[i];
    char a[160], b[160], detail[512];
    int same = o->graph_rank == w->rank;
    for (int d = 0; same && d < w->rank; d++)
        same = o->shape[d] == w->shape[d];
    if (!same) {
        shape_str(a, sizeof a, o->graph_rank, o->shape);
        shape_str(b, sizeof b, w->rank, w->shape);
        snprintf(why, cap, "output '%s': shape %s, want %s", o->name, a, b);
        return 0;
    }
    const void *got = r->out[i].data;
    void *widened = NULL;
    clf_dtype cmp;
    const void *want = w->data;
    void *want_conv = NULL;
    int e = w->elem;
    if (o->dtype == CLF_F32 && e == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) {
        cmp = CLF_F32;
    } else if (o->dtype == CLF_BOOL && e == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL) {
        cmp = CLF_BOOL;
    } else if (o->dtype == CLF_F16 && e == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16) {
        cmp = CLF_F16;
    } else if (o->dtype == CLF_BF16 &&
               (e == ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16 || e == ONNX__TENSOR_PROTO__DATA_TYPE__UINT16)) {
        cmp = CLF_BF16;
    } else if (o->dtype == CLF_I32 && e == ONNX__TENSOR_PROTO__DATA_TYPE__INT32) {
        cmp = CLF_I32;
    } else if (o->dtype == CLF_I64 && e == ONNX__TENSOR_PROTO__DATA_TYPE__INT64) {
        cmp = CLF_I64;
    } else if (o->dtype == CLF_I32 && e == ONNX__TENSOR_PROTO__DATA_TYPE__INT64) {
        /* int64 outputs are given as int32 (README): compare as int64 */
        cmp = CLF_I64;
        widened = calloc(w->n ? w->n : 1, 8);
        for (size_t k = 0; k < w->n; k++)
            ((int64_t *)widened)[k] = ((const int32_t *)got)[k];
        got = widened;
    } else if (o->dtype == CLF_I64 && e == ONNX__TENSOR_PROTO__DATA_TYPE__INT32) {
        cmp = CLF_I64;
        want_conv = calloc(w->n ? w->n : 1, 8);
        for (size_t k = 0; k < w->n; k++)
            ((int64_t *)want_conv)[k] = ((const int32_t *)want)[k];
        want = want_conv;
    } else {
        snprintf(why, cap, "output '%s': the graph gives %s, want %s", o->name, clf_dtype_name(o->dtype),
                 elem_name(e));
        return 0;
    }
    /* f16 and bf16 within two ulps of their type (the reference data is
     * numpy's, which rounds some ops differently from f32-then-round). */
    double rtol = cmp == CLF_F16 ? 2e-3 : cmp == CLF_BF16 ? 1.6e-2 : RTOL;
    int ok = clf_test_close(cmp, got, want, w->n, rtol, ATOL, detail, sizeof detail);
    if (!ok)
        snprintf(why, cap, "output '%s': %s", o->name, detail);
    free(widened);
    free(want_conv);
    return ok;
}

/* The graph inputs a case was loaded with bound as constants (see
 * "Inputs the library takes as constants" below); none for most cases. */
typedef struct bound_inputs {
    char names[MAX_IO][128];
    size_t n;
} bound_inputs;

static int is_bound(const bound_inputs *b, const char *name)
{
    for (size_t i = 0; b && name && i < b->n; i++)
        if (!strcmp(b->names[i], name))
            return 1;
    return 0;
}

/* The model input that input file k of a data set is: the one it names,
 * else the k-th of the model file's inputs. */
static const char *file_input(const case_info *ci, const char *name, int k)
{
    for (size_t i = 0; i < ci->ninputs; i++)
        if (name && !strcmp(ci->inputs[i], name))
            return ci->inputs[i];
    return (size_t)k < ci->ninputs ? ci->inputs[k] : NULL;
}

/* Compiles and runs g one way (fused or not) on data sets ds0 to ds1 - 1;
 * 0 with why written on the first failure. The files of inputs in bound
 * are not the graph's inputs any more and are left out. */
static int run_variant(clf_context *ctx, clf_onnx_model *m, const case_info *ci, const bound_inputs *bound,
                       const char *dir, int ds0, int ds1, int unfused, char *why, size_t cap)
{
    const char *variant = unfused ? "unfused" : "fused";
    clf_executable *exe = NULL;
    clf_status st = clf_compile(ctx, clf_onnx_model_graph(m),
                                unfused ? clf_compile_params(.disable_fusion = true) : NULL, &exe);
    if (st != CLF_OK) {
        char err[1024];
        snprintf(err, sizeof err, "%s", clf_context_last_error(ctx));
        snprintf(why, cap, "%s: clf_compile: %s: %s", variant, clf_status_name(st), first_line(err));
        return 0;
    }
    int ok = 1;
    for (int ds = ds0; ok && ds < ds1; ds++) {
        char dsdir[1100], path[1300], detail[1024];
        snprintf(dsdir, sizeof dsdir, "%s/test_data_set_%d", dir, ds);
        run_io r;
        memset(&r, 0, sizeof r);
        r.nin = clf_onnx_model_input_count(m);
        r.nout = clf_onnx_model_output_count(m);
        int nin_files = count_files(dsdir, "input"), nout_files = count_files(dsdir, "output");
        if (r.nin > MAX_IO || r.nout > MAX_IO) {
            snprintf(why, cap, "%zu inputs and %zu outputs, more than this test's %d", r.nin, r.nout, MAX_IO);
            r.nin = r.nout = 0;
            ok = 0;
            break;
        }
        if ((size_t)nout_files != r.nout) {
            snprintf(why, cap, "the model has %zu outputs, test_data_set_%d %d", r.nout, ds, nout_files);
            r.nin = r.nout = 0;
            ok = 0;
            break;
        }
        /* Inputs: input_k.pb is the model's k-th input, or the one it names. */
        tensor_data files[MAX_IO];
        int nf = nin_files < MAX_IO ? nin_files : MAX_IO;
        memset(files, 0, sizeof files);
        int kept = 0;
        for (int k = 0; ok && k < nf; k++) {
            snprintf(path, sizeof path, "%s/input_%d.pb", dsdir, k);
            if (!read_tensor(path, &files[kept], detail, sizeof detail)) {
                snprintf(why, cap, "%s", detail);
                ok = 0;
            } else if (is_bound(bound, file_input(ci, files[kept].name, k))) {
                tensor_free(&files[kept]);
            } else {
                kept++;
            }
        }
        nf = kept;
        size_t nset = 0;
        for (size_t i = 0; ok && i < r.nin; i++) {
            clf_onnx_io d;
            clf_onnx_model_input(m, i, &d);
            const tensor_data *t = NULL;
            for (int k = 0; k < nf && !t; k++)
                if (files[k].name && !strcmp(files[k].name, d.name))
                    t = &files[k];
            if (!t && i < (size_t)nf)
                t = &files[i];
            if (!t) {
                snprintf(why, cap, "no input file for input '%s'", d.name);
                ok = 0;
                break;
            }
            size_t n = 1;
            for (int k = 0; k < d.graph_rank; k++)
                n *= (size_t)d.shape[k];
            if (n != t->n) {
                char a[160], b[160];
                shape_str(a, sizeof a, d.graph_rank, d.shape);
                shape_str(b, sizeof b, t->rank, t->shape);
                snprintf(why, cap, "input '%s': the graph takes %s, the file holds %s", d.name, a, b);
                ok = 0;
                break;
            }
            void *p = to_graph_dtype(t, d.dtype, detail, sizeof detail);
            if (!p) {
                snprintf(why, cap, "input '%s': %s", d.name, detail);
                ok = 0;
                break;
            }
            r.in[i] = (clf_host_binding){d.name, p};
            nset = i + 1;
        }
        if (!ok)
            r.nin = nset;
        for (int k = 0; k < nf; k++)
            tensor_free(&files[k]);
        size_t nread = 0;
        for (size_t i = 0; ok && i < r.nout; i++) {
            clf_onnx_model_output(m, i, &r.out_io[i]);
            snprintf(path, sizeof path, "%s/output_%zu.pb", dsdir, i);
            if (!read_tensor(path, &r.want[i], detail, sizeof detail)) {
                snprintf(why, cap, "%s", detail);
                ok = 0;
                break;
            }
            size_t n = 1;
            for (int k = 0; k < r.out_io[i].graph_rank; k++)
                n *= (size_t)r.out_io[i].shape[k];
            size_t esz = clf_dtype_size(r.out_io[i].dtype);
            r.out[i] = (clf_host_binding){r.out_io[i].name, calloc(n ? n : 1, esz ? esz : 8)};
            nread = i + 1;
        }
        if (!ok) {
            r.nout = nread;
            run_io_free(&r);
            break;
        }
        st = clf_run_host(exe, r.nin, r.in, r.nout, r.out);
        if (st != CLF_OK) {
            char err[1024];
            snprintf(err, sizeof err, "%s", clf_context_last_error(ctx));
            snprintf(why, cap, "%s: clf_run_host: %s: %s", variant, clf_status_name(st), first_line(err));
            ok = 0;
        }
        for (size_t i = 0; ok && i < r.nout; i++)
            if (!compare_output(&r, i, detail, sizeof detail)) {
                snprintf(why, cap, "%s: %s", variant, detail);
                ok = 0;
            }
        run_io_free(&r);
    }
    clf_executable_destroy(&exe);
    return ok;
}

/* The reason a model that failed to load is skipped, or NULL when the
 * failure is a FAIL. msg is the library's message (without the model's
 * name). */
static const char *skip_reason(const case_info *ci, clf_status st, const char *msg, char *buf, size_t cap)
{
    if (ci->unclaimed[0]) {
        if (st == CLF_ERR_UNSUPPORTED)
            return msg;
        snprintf(buf, cap, "op(s) %s not claimed (load: %s: %s)", ci->unclaimed, clf_status_name(st), msg);
        return buf;
    }
    if (ci->bad_dtype[0]) {
        if (st == CLF_ERR_UNSUPPORTED)
            return msg;
        snprintf(buf, cap, "%s (load: %s: %s)", ci->bad_dtype, clf_status_name(st), msg);
        return buf;
    }
    /* Test data that contradicts the model's own declaration (castlike's
     * bfloat16 cases give 'like' as [1] where the model declares [3, 4]):
     * the library refuses the mismatch, as it should; the case cannot run. */
    if (st == CLF_ERR_SHAPE && strstr(msg, "(test_data_set_0) has shape ") && strstr(msg, " but the graph declares ")) {
        snprintf(buf, cap, "the test data contradicts the model's declared input shape (%s)", msg);
        return buf;
    }
    if (st != CLF_ERR_UNSUPPORTED)
        return NULL;
    /* Every op is claimed: "op X is not supported" for one of them is a
     * failure; any other UNSUPPORTED (a dtype, an attribute value, an
     * input libclfuse needs as a constant) a skip. */
    char pat[300];
    const char *p = ci->ops;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        snprintf(pat, sizeof pat, "%.*s is not supported", (int)len, p); /* "op X is not ...", "X is not ..." */
        for (const char *hit = msg; (hit = strstr(hit, pat)) != NULL; hit++)
            if (hit == msg || !(isalnum((unsigned char)hit[-1]) || hit[-1] == '_' || hit[-1] == '.'))
                return NULL;
        p += len + (end ? 1 : 0);
    }
    return msg;
}

/* ---- Inputs the library takes as constants ----------------------------------------------------- */

/* libclfuse takes a shape, axes, split sizes, Trilu's k and Range's bounds
 * when the graph is built (exporters write them as constants); ONNX's
 * cases give many of them as graph inputs, which the library refuses with
 * "the <role> input '<name>' must be a Constant, ...". Such a case is
 * loaded again with each input so named made an initializer holding the
 * data set's values (one model per data set), so that the op is still
 * checked against the case's outputs. The input named is read from that
 * message: the text the library documents for the refusal. */
#define CONSTANT_INPUT " must be a Constant, an initializer or computable from"

/* The input a refusal asks to be a constant, into name; 0 for another message. */
static int constant_input_named(const char *msg, char *name, size_t cap)
{
    const char *end = strstr(msg, "'" CONSTANT_INPUT);
    if (!end)
        return 0;
    const char *start = end;
    while (start > msg && start[-1] != '\'')
        start--;
    if (start == msg)
        return 0;
    snprintf(name, cap, "%.*s", (int)(end - start), start);
    return 1;
}

/* model.onnx with every input of b moved to the initializers, holding data
 * set ds's values, packed (malloc'd, *len bytes); NULL with why written
 * when an input named is not one of the graph's or has no file. */
static uint8_t *bind_inputs(const char *dir, const case_info *ci, int ds, const bound_inputs *b, size_t *len,
                            char *why, size_t cap)
{
    char path[1300];
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    size_t mlen;
    uint8_t *bytes = slurp(path, &mlen), *out = NULL;
    Onnx__ModelProto *m = bytes ? onnx__model_proto__unpack(NULL, mlen, bytes) : NULL;
    free(bytes);
    if (!m || !m->graph) {
        snprintf(why, cap, "model.onnx: not readable");
        goto done;
    }
    Onnx__GraphProto *g = m->graph;
    for (size_t j = 0; j < b->n; j++) {
        size_t at = g->n_input;
        for (size_t i = 0; i < g->n_input && at == g->n_input; i++)
            if (!strcmp(g->input[i]->name, b->names[j]))
                at = i;
        if (at == g->n_input) {
            snprintf(why, cap, "'%s' is computed in the graph, not one of its inputs", b->names[j]);
            goto done;
        }
        Onnx__TensorProto *value = NULL;
        char dsdir[1100];
        snprintf(dsdir, sizeof dsdir, "%s/test_data_set_%d", dir, ds);
        int nfiles = count_files(dsdir, "input");
        for (int k = 0; k < nfiles && !value; k++) { /* each file read once, as the TensorProto it is */
            char file[1300];
            size_t tlen;
            snprintf(file, sizeof file, "%s/input_%d.pb", dsdir, k);
            uint8_t *tb = slurp(file, &tlen);
            Onnx__TensorProto *t = tb ? onnx__tensor_proto__unpack(NULL, tlen, tb) : NULL;
            free(tb);
            const char *as = t ? file_input(ci, t->name, k) : NULL;
            if (as && !strcmp(as, b->names[j]))
                value = t;
            else if (t)
                onnx__tensor_proto__free_unpacked(t, NULL);
        }
        if (!value) {
            snprintf(why, cap, "no file of test_data_set_%d holds input '%s'", ds, b->names[j]);
            goto done;
        }
        free(value->name);
        value->name = strdup(b->names[j]);
        Onnx__TensorProto **inits = realloc(g->initializer, (g->n_initializer + 1) * sizeof *inits);
        if (!inits || !value->name) {
            onnx__tensor_proto__free_unpacked(value, NULL);
            snprintf(why, cap, "out of memory");
            goto done;
        }
        g->initializer = inits;
        g->initializer[g->n_initializer++] = value;
        onnx__value_info_proto__free_unpacked(g->input[at], NULL);
        memmove(&g->input[at], &g->input[at + 1], (g->n_input - at - 1) * sizeof g->input[0]);
        g->n_input--;
    }
    *len = onnx__model_proto__get_packed_size(m);
    out = malloc(*len ? *len : 1);
    if (out)
        onnx__model_proto__pack(m, out);
done:
    if (m)
        onnx__model_proto__free_unpacked(m, NULL);
    return out;
}

/* Loads the case's model (the file, or bytes when given) with the shapes
 * of data set ds's inputs fixing symbolic dimensions; the inputs in bound
 * are initializers there and given no shape. */
static clf_status load_case(const char *dir, const char *name, const case_info *ci, int ds, const bound_inputs *bound,
                            const uint8_t *bytes, size_t len, clf_onnx_model **m, char *msg, size_t msg_cap)
{
    char dsdir[1100], path[1300], origin[32];
    snprintf(dsdir, sizeof dsdir, "%s/test_data_set_%d", dir, ds);
    snprintf(origin, sizeof origin, "test_data_set_%d", ds);
    clf_onnx_input_shape given[MAX_IO];
    tensor_data gt[MAX_IO];
    memset(gt, 0, sizeof gt);
    size_t ngiven = 0;
    int nin_files = count_files(dsdir, "input");
    for (int k = 0; k < nin_files && ngiven < MAX_IO; k++) {
        char detail[512];
        snprintf(path, sizeof path, "%s/input_%d.pb", dsdir, k);
        if (!read_tensor(path, &gt[ngiven], detail, sizeof detail))
            continue; /* run_variant says why */
        tensor_data *t = &gt[ngiven];
        const char *as = file_input(ci, t->name, k); /* the model input it is */
        if (!as || is_bound(bound, as)) {
            tensor_free(t);
            continue;
        }
        clf_onnx_input_shape *s = &given[ngiven];
        memset(s, 0, sizeof *s);
        s->name = as;
        s->origin = origin;
        s->rank = t->rank;
        memcpy(s->shape, t->shape, sizeof s->shape);
        s->dtype = t->elem == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT     ? CLF_F32
                   : t->elem == ONNX__TENSOR_PROTO__DATA_TYPE__INT32   ? CLF_I32
                   : t->elem == ONNX__TENSOR_PROTO__DATA_TYPE__INT64   ? CLF_I64
                   : t->elem == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16 ? CLF_F16
                   : t->elem == ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16 ||
                           t->elem == ONNX__TENSOR_PROTO__DATA_TYPE__UINT16
                       ? CLF_BF16 /* older test data keeps bfloat16 bits as uint16 */
                       : CLF_BOOL;
        ngiven++;
    }
    const clf_onnx_params *p = clf_onnx_params(.inputs = given, .ninputs = ngiven, .name = name, .message = msg,
                                               .message_cap = msg_cap);
    clf_status st;
    if (bytes) {
        st = clf_onnx_load_memory(bytes, len, dir, p, m);
    } else {
        snprintf(path, sizeof path, "%s/model.onnx", dir);
        st = clf_onnx_load_file(path, p, m);
    }
    for (size_t k = 0; k < ngiven; k++)
        tensor_free(&gt[k]);
    if (st != CLF_OK) { /* the message starts with the model's name (params.name) */
        size_t nl = strlen(name);
        if (!strncmp(msg, name, nl) && msg[nl] == ':')
            memmove(msg, msg + nl + (msg[nl + 1] == ' ' ? 2 : 1), strlen(msg + nl) + 1);
    }
    return st;
}

/* Runs the case with the inputs the library asked for (named in msg, the
 * refusal of the plain load) bound as constants, one model per data set.
 * 1 when it ran (passed or failed: emitted), 0 when it still does not
 * load for the same reason or another (msg, st: that load's). */
static int run_bound(clf_context *ctx, const char *dir, const char *name, const case_info *ci, int ndata,
                     size_t unfused_max, clf_status *st, char *msg, size_t msg_cap)
{
    bound_inputs b;
    memset(&b, 0, sizeof b);
    char why[4096] = "", list[MAX_IO * 132] = "";
    int ok = 1;
    for (int ds = 0; ok && ds < ndata; ds++) {
        clf_onnx_model *m = NULL;
        for (;;) { /* bind what the library names, one input at a time */
            char input[128];
            if (!constant_input_named(msg, input, sizeof input) || is_bound(&b, input) || b.n == MAX_IO)
                return 0;
            snprintf(b.names[b.n++], sizeof b.names[0], "%s", input);
            size_t len;
            uint8_t *bytes = bind_inputs(dir, ci, ds, &b, &len, why, sizeof why);
            if (!bytes) {
                snprintf(msg, msg_cap, "%s", why);
                return 0;
            }
            *st = load_case(dir, name, ci, ds, &b, bytes, len, &m, msg, msg_cap);
            free(bytes);
            if (*st == CLF_OK)
                break;
            if (!constant_input_named(msg, input, sizeof input))
                return 0;
        }
        ok = run_variant(ctx, m, ci, &b, dir, ds, ds + 1, 0, why, sizeof why);
        if (ok && ci->nnodes <= unfused_max)
            ok = run_variant(ctx, m, ci, &b, dir, ds, ds + 1, 1, why, sizeof why);
        clf_onnx_model_destroy(&m);
        list[0] = 0;
        for (size_t i = 0; i < b.n; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s'%s'", i ? ", " : "", b.names[i]);
        b.n = 0; /* the next data set binds again from the plain load's refusal */
    }
    if (ok)
        emit("PASS", name, "with input(s) %s bound as constants", list);
    else
        emit("FAIL", name, "with input(s) %s bound as constants: %s", list, why);
    return 1;
}

static void run_one_case(clf_context *ctx, const char *root, const char *name, size_t unfused_max, case_info *cip)
{
    char dir[1024], path[1300], msg[2048] = "", buf[3072], why[4096];
    snprintf(current_case, sizeof current_case, "%s", name);
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    ncases++;

    case_info ci;
    memset(cip, 0, sizeof *cip);
    if (!read_case_info(path, &ci)) {
        emit("FAIL", name, "model.onnx: not readable as a ModelProto by protobuf-c");
        return;
    }
    int ndata = 0;
    for (;; ndata++) {
        struct stat sb;
        snprintf(path, sizeof path, "%s/test_data_set_%d", dir, ndata);
        if (stat(path, &sb) != 0)
            break;
    }
    *cip = ci;
    if (ndata == 0) {
        emit("SKIP", name, "no test_data_set_0");
        return;
    }
    clf_onnx_model *m = NULL;
    clf_status st = load_case(dir, name, &ci, 0, NULL, NULL, 0, &m, msg, sizeof msg);
    if (st == CLF_ERR_UNSUPPORTED && !ci.unclaimed[0] && !ci.bad_dtype[0]) {
        char first[sizeof msg];
        snprintf(first, sizeof first, "%s", msg);
        if (run_bound(ctx, dir, name, &ci, ndata, unfused_max, &st, msg, sizeof msg))
            return;
        if (strcmp(first, msg)) { /* the bound form's refusal, after the plain one's */
            char both[2 * sizeof msg + 64];
            snprintf(both, sizeof both, "%s; with it bound as a constant: %s", first, msg);
            snprintf(msg, sizeof msg, "%.*s", (int)sizeof msg - 1, both);
        }
    }
    if (st != CLF_OK) {
        const char *reason = skip_reason(&ci, st, msg, buf, sizeof buf);
        if (reason)
            emit("SKIP", name, "%s", reason);
        else
            emit("FAIL", name, "load: %s: %s", clf_status_name(st), msg);
        return;
    }
    int ok = run_variant(ctx, m, &ci, NULL, dir, 0, ndata, 0, why, sizeof why);
    if (ok && ci.nnodes <= unfused_max)
        ok = run_variant(ctx, m, &ci, NULL, dir, 0, ndata, 1, why, sizeof why);
    if (ok)
        emit("PASS", name, NULL);
    else
        emit("FAIL", name, "%s", why);
    clf_onnx_model_destroy(&m);
}

static void run_case(clf_context *ctx, const char *root, const char *name, size_t unfused_max)
{
    double t0 = now_s();
    int before = nfail + npass + nskip;
    case_info ci;
    run_one_case(ctx, root, name, unfused_max, &ci);
    if (verbose && nfail + npass + nskip > before)
        fprintf(stderr, "%s: %.2f s, %zu nodes, ops %s%s%s\n", name, now_s() - t0, ci.nnodes, ci.ops,
                ci.unclaimed[0] ? ", not claimed: " : "", ci.unclaimed);
}

/* ---- The test ------------------------------------------------------------------------------- */

static const char *node_dir(void)
{
    const char *d = getenv("CLFUSE_ONNX_NODE_DIR");
    return d && d[0] ? d : DEFAULT_NODE_DIR;
}

static int is_case(const struct dirent *e)
{
    return strncmp(e->d_name, "test_", 5) == 0;
}

START_TEST(onnx_node_conformance)
{
    const char *root = node_dir();
    const char *filter = getenv("CLFUSE_ONNX_NODE_FILTER");
    const char *rpath = getenv("CLFUSE_ONNX_NODE_RESULTS");
    const char *um = getenv("CLFUSE_ONNX_NODE_UNFUSED_MAX");
    size_t unfused_max = um && um[0] ? (size_t)strtoull(um, NULL, 10) : (size_t)-1;
    const char *vb = getenv("CLFUSE_ONNX_NODE_VERBOSE");
    verbose = vb && vb[0] && strcmp(vb, "0");
    if (rpath && rpath[0]) {
        results = fopen(rpath, "w");
        ck_assert_msg(results != NULL, "%s: %s", rpath, strerror(errno));
        results_fd = fileno(results);
    }
    struct dirent **ents = NULL;
    int n = scandir(root, &ents, is_case, alphasort);
    ck_assert_msg(n >= 0, "%s: %s", root, strerror(errno));
    catch_crashes(1);

    clf_context *ctx = clf_test_context();
    double t0 = now_s();
    for (int i = 0; i < n; i++) {
        if (!filter || strstr(ents[i]->d_name, filter))
            run_case(ctx, root, ents[i]->d_name, unfused_max);
        free(ents[i]);
    }
    free(ents);
    double wall = now_s() - t0;
    clf_context_destroy(&ctx);
    catch_crashes(0);

    char summary[256];
    snprintf(summary, sizeof summary, "onnx_node: %d passed, %d failed, %d skipped of %d (%.1f s)", npass, nfail,
             nskip, ncases, wall);
    printf("%s\n", summary);
    fflush(stdout);
    if (results) {
        fprintf(results, "%s\n", summary);
        fclose(results);
        results = NULL;
        results_fd = -1;
    }
    ck_assert_msg(nfail == 0, "%d of %d ONNX node tests failed (FAIL lines above%s%s)", nfail, ncases,
                  rpath ? ", and in " : "", rpath ? rpath : "");
}
END_TEST

int main(void)
{
    struct stat sb;
    if (stat(node_dir(), &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        printf("onnx_node: %s not found (install libonnx-testdata): skipped\n", node_dir());
        return 77; /* meson: skipped */
    }
    Suite *s = suite_create("onnx_node");
    TCase *tc = tcase_create("onnx_node_conformance");
    tcase_set_timeout(tc, 1200);
    tcase_add_test(tc, onnx_node_conformance);
    suite_add_tcase(s, tc);
    return clf_test_run_suite(s);
}
