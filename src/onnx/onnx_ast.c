/* The AST's shared pieces: element types, the arena, reading elements of
 * a tensor literal, and how messages name nodes. */
#include "onnx_ast.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util/alloc.h"

/* ---- Element types ------------------------------------------------------ */

static const struct {
    const char *name;
    int elem;
    size_t size;
} elems[] = {
    {"float", CLF__ONNX_FLOAT, 4},    {"uint8", CLF__ONNX_UINT8, 1},     {"int8", CLF__ONNX_INT8, 1},
    {"uint16", CLF__ONNX_UINT16, 2},  {"int16", CLF__ONNX_INT16, 2},     {"int32", CLF__ONNX_INT32, 4},
    {"int64", CLF__ONNX_INT64, 8},    {"string", CLF__ONNX_STRING, 0},   {"bool", CLF__ONNX_BOOL, 1},
    {"float16", CLF__ONNX_FLOAT16, 2}, {"double", CLF__ONNX_DOUBLE, 8},  {"uint32", CLF__ONNX_UINT32, 4},
    {"uint64", CLF__ONNX_UINT64, 8},  {"complex64", CLF__ONNX_COMPLEX64, 0},
    {"complex128", CLF__ONNX_COMPLEX128, 0}, {"bfloat16", CLF__ONNX_BFLOAT16, 2},
};

const char *clf__onnx_elem_name(int elem)
{
    for (size_t i = 0; i < sizeof elems / sizeof elems[0]; i++)
        if (elems[i].elem == elem)
            return elems[i].name;
    return "?";
}

int clf__onnx_elem_from_name(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof elems / sizeof elems[0]; i++)
        if (strlen(elems[i].name) == len && !memcmp(elems[i].name, name, len))
            return elems[i].elem;
    return CLF__ONNX_UNDEFINED;
}

size_t clf__onnx_elem_size(int elem)
{
    for (size_t i = 0; i < sizeof elems / sizeof elems[0]; i++)
        if (elems[i].elem == elem)
            return elems[i].size;
    return 0;
}

bool clf__onnx_elem_is_float(int elem)
{
    return elem == CLF__ONNX_FLOAT || elem == CLF__ONNX_DOUBLE || elem == CLF__ONNX_FLOAT16 ||
           elem == CLF__ONNX_BFLOAT16;
}

bool clf__onnx_elem_is_integer(int elem)
{
    switch (elem) {
    case CLF__ONNX_UINT8: case CLF__ONNX_INT8: case CLF__ONNX_UINT16: case CLF__ONNX_INT16:
    case CLF__ONNX_INT32: case CLF__ONNX_INT64: case CLF__ONNX_BOOL: case CLF__ONNX_UINT32:
    case CLF__ONNX_UINT64:
        return true;
    default:
        return false;
    }
}

/* ---- Arena -------------------------------------------------------------- */

struct clf__onnx_block {
    struct clf__onnx_block *next;
    size_t used, cap;
    max_align_t data[];
};

struct clf__onnx_cleanup {
    struct clf__onnx_cleanup *next;
    void (*fn)(void *);
    void *ctx;
};

#define BLOCK_BYTES 16384

void *clf__onnx_alloc(clf__onnx_arena *a, size_t size)
{
    if (size > SIZE_MAX - sizeof(max_align_t) - sizeof(struct clf__onnx_block))
        return NULL;
    size = (size + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    if (!size)
        size = sizeof(max_align_t);
    struct clf__onnx_block *b = a->blocks;
    if (!b || b->cap - b->used < size) {
        /* Large requests get a block of their own, behind the current one
         * so that its free space is not lost. */
        size_t cap = size > BLOCK_BYTES ? size : BLOCK_BYTES;
        struct clf__onnx_block *nb = clf__malloc(sizeof *nb + cap);
        if (!nb)
            return NULL;
        nb->used = 0;
        nb->cap = cap;
        if (b && size > BLOCK_BYTES) {
            nb->next = b->next;
            b->next = nb;
        } else {
            nb->next = b;
            a->blocks = nb;
        }
        b = nb;
    }
    void *r = (char *)b->data + b->used;
    b->used += size;
    memset(r, 0, size);
    return r;
}

char *clf__onnx_strndup(clf__onnx_arena *a, const char *s, size_t n)
{
    if (n == SIZE_MAX)
        return NULL;
    char *r = clf__onnx_alloc(a, n + 1);
    if (r && n)
        memcpy(r, s, n);
    return r;
}

bool clf__onnx_defer(clf__onnx_arena *a, void (*fn)(void *), void *ctx)
{
    struct clf__onnx_cleanup *c = clf__onnx_alloc(a, sizeof *c);
    if (!c)
        return false;
    *c = (struct clf__onnx_cleanup){a->cleanups, fn, ctx};
    a->cleanups = c;
    return true;
}

static void run_cleanups(clf__onnx_arena *a)
{
    for (struct clf__onnx_cleanup *c = a->cleanups; c; c = c->next)
        c->fn(c->ctx);
    a->cleanups = NULL;
}

void clf__onnx_arena_free(clf__onnx_arena *a)
{
    run_cleanups(a);
    struct clf__onnx_block *b = a->blocks;
    while (b) {
        struct clf__onnx_block *nx = b->next;
        clf__free(b);
        b = nx;
    }
    a->blocks = NULL;
}

/* ---- Tensor elements ------------------------------------------------------ */

/* Element k, loaded through memcpy: tensor data in a mapped file need not
 * be aligned. */
#define LOAD(T)                                                                                         \
    T v;                                                                                                \
    memcpy(&v, (const char *)t->data + k * sizeof v, sizeof v)

int64_t clf__onnx_tensor_int(const clf__onnx_tensor *t, size_t k)
{
    switch (t->type.elem) {
    case CLF__ONNX_UINT8: case CLF__ONNX_BOOL: { LOAD(uint8_t); return v; }
    case CLF__ONNX_INT8: { LOAD(int8_t); return v; }
    case CLF__ONNX_UINT16: { LOAD(uint16_t); return v; }
    case CLF__ONNX_INT16: { LOAD(int16_t); return v; }
    case CLF__ONNX_INT32: { LOAD(int32_t); return v; }
    case CLF__ONNX_INT64: { LOAD(int64_t); return v; }
    case CLF__ONNX_UINT32: { LOAD(uint32_t); return v; }
    case CLF__ONNX_UINT64: { LOAD(uint64_t); return (int64_t)v; }
    default: {
        double d = clf__onnx_tensor_double(t, k);
        return isnan(d) ? 0 : d >= 0x1p63 ? INT64_MAX : d <= -0x1p63 ? INT64_MIN : (int64_t)d;
    }
    }
}

double clf__onnx_tensor_double(const clf__onnx_tensor *t, size_t k)
{
    switch (t->type.elem) {
    case CLF__ONNX_FLOAT: { LOAD(float); return v; }
    case CLF__ONNX_DOUBLE: { LOAD(double); return v; }
    case CLF__ONNX_FLOAT16: { LOAD(uint16_t); return clf_f32_from_f16(v); }
    case CLF__ONNX_BFLOAT16: { LOAD(uint16_t); return clf_f32_from_bf16(v); }
    case CLF__ONNX_UINT64: { LOAD(uint64_t); return (double)v; }
    default: return (double)clf__onnx_tensor_int(t, k);
    }
}

#undef LOAD

/* ---- The model ---------------------------------------------------------- */

const clf__onnx_attr *clf__onnx_node_attr(const clf__onnx_node *n, const char *name)
{
    for (int i = 0; i < n->nattrs; i++)
        if (!strcmp(n->attrs[i].name, name))
            return &n->attrs[i];
    return NULL;
}

void clf__onnx_node_label(const clf__onnx_model *m, int index, char *buf, size_t cap)
{
    const clf__onnx_node *n = &m->nodes[index];
    if (n->name && n->name[0])
        snprintf(buf, cap, "node %d '%s' (%s)", index, n->name, n->op);
    else
        snprintf(buf, cap, "node %d (%s)", index, n->op);
}

static void drop(clf__onnx_tensor *t)
{
    if (t)
        t->data = NULL;
}

void clf__onnx_release_data(clf__onnx_model *m)
{
    for (int i = 0; i < m->ninputs; i++)
        drop(m->inputs[i].init);
    for (int i = 0; i < m->nextras; i++)
        drop(m->extras[i].init);
    for (int k = 0; k < m->nnodes; k++)
        for (int j = 0; j < m->nodes[k].nattrs; j++)
            drop(m->nodes[k].attrs[j].t);
    run_cleanups(&m->arena);
}

void clf__onnx_ast_free(clf__onnx_model *m)
{
    if (!m)
        return;
    clf__onnx_arena_free(&m->arena);
    memset(m, 0, sizeof *m);
}

/* ---- Format ----------------------------------------------------------- */

/* Text: the first bytes (up to 4 kB) are printable ASCII or UTF-8 and
 * whitespace, and the first thing after whitespace and comments is '<' or
 * a name. A binary ModelProto starts with a field tag (0x08 for
 * ir_version, as every exporter writes it) and holds control bytes in its
 * lengths and varints soon after. */
bool clf__onnx_looks_like_text(const void *data, size_t size)
{
    const unsigned char *p = data;
    if (size >= 3 && !memcmp(p, "\xef\xbb\xbf", 3)) { /* a UTF-8 byte order mark */
        p += 3;
        size -= 3;
    }
    size_t n = size < 4096 ? size : 4096;
    for (size_t i = 0; i < n; i++)
        if ((p[i] < 0x20 && p[i] != '\n' && p[i] != '\r' && p[i] != '\t') || p[i] == 0x7f)
            return false;
    size_t i = 0;
    for (;;) {
        while (i < n && isspace(p[i]))
            i++;
        if (i < n && p[i] == '#') {
            while (i < n && p[i] != '\n')
                i++;
            continue;
        }
        break;
    }
    return i < n && (p[i] == '<' || p[i] == '_' || isalpha(p[i]));
}
