/* The public ONNX API (onnx.h): reading a model's bytes from a file or
 * memory, choosing the syntax, running the reader and the importer, and
 * answering questions about the result. The model keeps the AST (names,
 * declarations, nodes) and the import's tables; the tensor data of the
 * AST is released as soon as the graph holds its copy. */
#include "clfuse/onnx.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx_ast.h"
#include "onnx_import.h"
#include "util/alloc.h"

/* An input or output as the queries give it, fixed at load time so that
 * the answers do not need the graph (which the caller may have taken). */
typedef struct io_entry {
    const clf__onnx_value *decl;
    clf_tensor t;
    clf_dtype dtype;
    int rank;
    int64_t shape[CLF_MAX_RANK];
} io_entry;

struct clf_onnx_model {
    clf__onnx_model ast;
    clf__onnx_import imp;
    clf_graph *graph; /* NULL once taken */
    io_entry *inputs, *outputs;
    size_t ninputs, noutputs;
};

#define ERR_CAP 1024

/* Writes "NAME:[LINE:COL: ]reason" (text positions join the name without
 * a space, as compilers write them) to the caller's buffer, control
 * characters (a name's newline) written as '?'. */
static void report(const clf_onnx_params *p, const char *name, const char *reason)
{
    if (!p || !p->message || !p->message_cap)
        return;
    bool positioned = reason[0] >= '0' && reason[0] <= '9';
    snprintf(p->message, p->message_cap, "%s:%s%s", name, positioned ? "" : " ", reason);
    /* One line, whatever bytes a model's names hold. */
    for (char *c = p->message; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
}

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static clf_status fail(const clf_onnx_params *p, const char *name, clf_status st, const char *fmt, ...)
{
    char reason[ERR_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    report(p, name, reason);
    return st;
}

void clf_onnx_model_destroy(clf_onnx_model **m)
{
    if (!m || !*m)
        return;
    clf_onnx_model *M = *m;
    M->imp.g = NULL; /* the model's graph is M->graph */
    clf__onnx_import_free(&M->imp);
    clf_graph_destroy(&M->graph);
    clf__onnx_ast_free(&M->ast);
    clf__free(M->inputs);
    clf__free(M->outputs);
    clf__free(M);
    *m = NULL;
}

static const clf__onnx_import_value *find_value(const clf_onnx_model *m, const char *name)
{
    for (size_t i = m->imp.nvalues; i-- > 0;)
        if (!strcmp(m->imp.values[i].name, name))
            return &m->imp.values[i];
    return NULL;
}

static void fill_io(const clf_onnx_model *m, io_entry *e, const clf__onnx_value *decl)
{
    e->decl = decl;
    const clf__onnx_import_value *v = find_value(m, decl->name);
    e->t = v ? v->t : CLF_TENSOR_INVALID;
    if (clf_tensor_valid(e->t)) {
        clf_tensor_dtype(m->graph, e->t, &e->dtype);
        clf_tensor_shape(m->graph, e->t, &e->rank, e->shape);
    }
}

/* Reads and imports size bytes; name and base_dir as the callers say. */
static clf_status load(const void *data, size_t size, const char *base_dir, const char *name,
                       const clf_onnx_params *p, clf_onnx_model **out)
{
    char err[ERR_CAP] = "";
    if (!size)
        return fail(p, name, CLF_ERR_MODEL, "the model is empty (0 bytes)");
    clf_onnx_format format = p ? p->format : CLF_ONNX_FORMAT_AUTO;
    if (format == CLF_ONNX_FORMAT_AUTO)
        format = clf__onnx_looks_like_text(data, size) ? CLF_ONNX_FORMAT_TEXT : CLF_ONNX_FORMAT_BINARY;
    if (format != CLF_ONNX_FORMAT_TEXT && format != CLF_ONNX_FORMAT_BINARY)
        return fail(p, name, CLF_ERR_INVALID_ARGUMENT, "clf_onnx_params.format %d is not a clf_onnx_format",
                    (int)format);
    clf_onnx_model *m = clf__calloc(1, sizeof *m);
    if (!m)
        return fail(p, name, CLF_ERR_OUT_OF_MEMORY, "out of memory");
    clf_status st = format == CLF_ONNX_FORMAT_TEXT
                        ? clf__onnx_parse_text(data, size, &m->ast, err, sizeof err)
                        : clf__onnx_read_binary(data, size, base_dir, &m->ast, err, sizeof err);
    if (st == CLF_OK)
        st = clf__onnx_import_model(&m->ast, p, &m->imp, err, sizeof err);
    if (st != CLF_OK)
        goto failed;
    /* The graph has its own copy of every constant now. */
    clf__onnx_release_data(&m->ast);
    m->graph = m->imp.g;
    for (int i = 0; i < m->ast.ninputs; i++)
        m->ninputs += !m->ast.inputs[i].init;
    m->noutputs = (size_t)m->ast.noutputs;
    m->inputs = clf__calloc(m->ninputs ? m->ninputs : 1, sizeof *m->inputs);
    m->outputs = clf__calloc(m->noutputs ? m->noutputs : 1, sizeof *m->outputs);
    if (!m->inputs || !m->outputs) {
        st = CLF_ERR_OUT_OF_MEMORY;
        snprintf(err, sizeof err, "out of memory");
        goto failed;
    }
    for (int i = 0, k = 0; i < m->ast.ninputs; i++)
        if (!m->ast.inputs[i].init)
            fill_io(m, &m->inputs[k++], &m->ast.inputs[i]);
    for (size_t i = 0; i < m->noutputs; i++)
        fill_io(m, &m->outputs[i], &m->ast.outputs[i]);
    *out = m;
    return CLF_OK;
failed:
    report(p, name, err);
    clf_onnx_model_destroy(&m);
    return st;
}

clf_status clf_onnx_load_memory(const void *data, size_t size, const char *base_dir, const clf_onnx_params *params,
                                clf_onnx_model **out)
{
    const char *name = params && params->name ? params->name : "<memory>";
    if (!out)
        return fail(params, name, CLF_ERR_INVALID_ARGUMENT, "clf_onnx_load_memory: out is NULL");
    *out = NULL;
    if (!data && size)
        return fail(params, name, CLF_ERR_INVALID_ARGUMENT, "clf_onnx_load_memory: data is NULL");
    return load(data, size, base_dir, name, params, out);
}

/* The folder holding path ("." for a bare file name) into buf. */
static bool folder_of(const char *path, char *buf, size_t cap)
{
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) : 0;
    if (slash && n == 0)
        n = 1; /* "/model.onnx" */
    if (n + 2 > cap)
        return false;
    if (slash)
        memcpy(buf, path, n);
    else
        buf[n++] = '.';
    buf[n] = 0;
    return true;
}

clf_status clf_onnx_load_file(const char *path, const clf_onnx_params *params, clf_onnx_model **out)
{
    const char *name = params && params->name ? params->name : path;
    if (!out || !path)
        return fail(params, name ? name : "<null>", CLF_ERR_INVALID_ARGUMENT, "clf_onnx_load_file: %s is NULL",
                    out ? "path" : "out");
    *out = NULL;
    char dir[4096];
    if (!folder_of(path, dir, sizeof dir))
        return fail(params, name, CLF_ERR_INVALID_ARGUMENT, "the path is too long");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fail(params, name, CLF_ERR_IO, "cannot open: %s", strerror(errno));
    clf_status st;
    struct stat sb;
    void *map = NULL;
    char *buf = NULL;
    size_t size = 0;
    if (fstat(fd, &sb) != 0) {
        st = fail(params, name, CLF_ERR_IO, "cannot stat: %s", strerror(errno));
        goto done;
    }
    if (S_ISDIR(sb.st_mode)) {
        st = fail(params, name, CLF_ERR_IO, "is a folder, not a model file");
        goto done;
    }
    /* A regular file is mapped: its bytes are paged in as the reader goes
     * and never copied. Anything else (a pipe) is read whole. */
    if (S_ISREG(sb.st_mode) && sb.st_size > 0 && (uintmax_t)sb.st_size <= SIZE_MAX) {
        size = (size_t)sb.st_size;
        map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED)
            map = NULL;
    }
    if (!map) {
        size_t cap = 0;
        size = 0;
        for (;;) {
            if (size == cap) {
                size_t nc = cap ? cap * 2 : 65536;
                char *nb = nc > cap ? clf__realloc(buf, nc) : NULL;
                if (!nb) {
                    st = fail(params, name, CLF_ERR_OUT_OF_MEMORY, "out of memory reading the file");
                    goto done;
                }
                buf = nb;
                cap = nc;
            }
            ssize_t r = read(fd, buf + size, cap - size);
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0) {
                st = fail(params, name, CLF_ERR_IO, "read error: %s", strerror(errno));
                goto done;
            }
            if (r == 0)
                break;
            size += (size_t)r;
        }
    }
    st = load(map ? map : buf, size, dir, name, params, out);
done:
    if (map)
        munmap(map, size);
    clf__free(buf);
    close(fd);
    return st;
}

clf_graph *clf_onnx_model_graph(clf_onnx_model *m) { return m ? m->graph : NULL; }

clf_graph *clf_onnx_model_take_graph(clf_onnx_model *m)
{
    if (!m)
        return NULL;
    clf_graph *g = m->graph;
    m->graph = NULL;
    return g;
}

clf_status clf_onnx_model_get_info(const clf_onnx_model *m, clf_onnx_model_info *out)
{
    if (!m || !out)
        return CLF_ERR_INVALID_ARGUMENT;
    *out = (clf_onnx_model_info){m->ast.name, m->ast.producer, m->ast.ir_version, m->ast.opset, m->ast.format};
    return CLF_OK;
}

size_t clf_onnx_model_input_count(const clf_onnx_model *m) { return m ? m->ninputs : 0; }
size_t clf_onnx_model_output_count(const clf_onnx_model *m) { return m ? m->noutputs : 0; }

static void describe_io(const io_entry *e, clf_onnx_io *out)
{
    const clf__onnx_type *t = &e->decl->type;
    memset(out, 0, sizeof *out);
    out->name = e->decl->name;
    out->onnx_dtype = clf__onnx_elem_name(t->elem);
    out->onnx_elem_type = t->elem;
    out->rank = t->has_shape ? t->rank : -1;
    for (int d = 0; t->has_shape && d < t->rank; d++) {
        out->dim_params[d] = t->dims[d].param;
        out->dims[d] = t->dims[d].param ? -1 : t->dims[d].value;
    }
    out->tensor = e->t;
    out->dtype = e->dtype;
    out->graph_rank = e->rank;
    memcpy(out->shape, e->shape, sizeof out->shape);
}

clf_status clf_onnx_model_input(const clf_onnx_model *m, size_t i, clf_onnx_io *out)
{
    if (!m || !out)
        return CLF_ERR_INVALID_ARGUMENT;
    if (i >= m->ninputs)
        return CLF_ERR_NOT_FOUND;
    describe_io(&m->inputs[i], out);
    return CLF_OK;
}

clf_status clf_onnx_model_output(const clf_onnx_model *m, size_t i, clf_onnx_io *out)
{
    if (!m || !out)
        return CLF_ERR_INVALID_ARGUMENT;
    if (i >= m->noutputs)
        return CLF_ERR_NOT_FOUND;
    describe_io(&m->outputs[i], out);
    return CLF_OK;
}

size_t clf_onnx_model_node_count(const clf_onnx_model *m) { return m ? (size_t)m->ast.nnodes : 0; }

clf_status clf_onnx_model_node(const clf_onnx_model *m, size_t i, clf_onnx_node *out)
{
    if (!m || !out)
        return CLF_ERR_INVALID_ARGUMENT;
    if (i >= (size_t)m->ast.nnodes)
        return CLF_ERR_NOT_FOUND;
    const clf__onnx_node *n = &m->ast.nodes[i];
    *out = (clf_onnx_node){
        .name = n->name,
        .op_type = n->op,
        .domain = n->domain,
        .inputs = n->inputs,
        .outputs = n->outputs,
        .ninputs = (size_t)n->ninputs,
        .noutputs = (size_t)n->noutputs,
        .first_graph_node = m->imp.nodes[i].first,
        .end_graph_node = m->imp.nodes[i].end,
        .line = n->pos.line,
        .col = n->pos.col,
    };
    return CLF_OK;
}

size_t clf_onnx_model_value_count(const clf_onnx_model *m) { return m ? m->imp.nvalues : 0; }

clf_status clf_onnx_model_value(const clf_onnx_model *m, size_t i, clf_onnx_value *out)
{
    if (!m || !out)
        return CLF_ERR_INVALID_ARGUMENT;
    if (i >= m->imp.nvalues)
        return CLF_ERR_NOT_FOUND;
    const clf__onnx_import_value *v = &m->imp.values[i];
    *out = (clf_onnx_value){v->name, v->t, v->producer};
    return CLF_OK;
}

clf_status clf_onnx_model_find_value(const clf_onnx_model *m, const char *name, clf_onnx_value *out)
{
    if (!m || !name || !out)
        return CLF_ERR_INVALID_ARGUMENT;
    const clf__onnx_import_value *v = find_value(m, name);
    if (!v)
        return CLF_ERR_NOT_FOUND;
    *out = (clf_onnx_value){v->name, v->t, v->producer};
    return CLF_OK;
}
