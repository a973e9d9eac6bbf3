/* Binary ONNX: a serialized ModelProto, decoded by protobuf-c with C
 * generated at build time from Debian's onnx.proto, then converted to the
 * AST the text parser also produces. Names are copied into the AST's
 * arena; tensor data is not copied where the decoded message already
 * holds it in the element type's bytes (raw_data on a little-endian host,
 * float_data, int32_data of int32, int64_data, double_data, uint64_data of
 * uint64) or where it lies in a mapped external file: the message and the
 * mappings are released with the AST's data. Everything libclfuse cannot
 * read is refused with a message naming the node or initializer. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <protobuf-c/protobuf-c.h>

#include "onnx.pb-c.h"
#include "onnx_ast.h"
#include "onnx_external.h"
#include "util/alloc.h"

/* protobuf-c recurses once per nested message and has no depth limit: a
 * crafted file of a few kilobytes nesting graphs in attributes would
 * overflow the stack. The wire format is scanned first (tags and lengths
 * only, no values decoded) and deeper nesting refused; ONNX models nest a
 * few levels (a graph in an If's attribute in a graph ...). */
#define MAX_NESTING 64

typedef struct reader {
    clf__onnx_model *m;
    const char *base_dir;
    clf__onnx_external *ext;
    char *err;
    size_t cap;
    clf_status status;
} reader;

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static clf_status fail(reader *R, clf_status st, const char *where, const char *fmt, ...)
{
    if (R->status)
        return R->status;
    int n = where && where[0] ? snprintf(R->err, R->cap, "%s: ", where) : 0;
    if (n >= 0 && (size_t)n < R->cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(R->err + n, R->cap - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return R->status = st;
}

static clf_status oom(reader *R) { return fail(R, CLF_ERR_OUT_OF_MEMORY, "", "out of memory"); }

static void *alloc(reader *R, size_t size)
{
    void *p = clf__onnx_alloc(&R->m->arena, size);
    if (!p)
        oom(R);
    return p;
}

/* An arena copy of a message string; "" for an absent one, and when out
 * of memory (with the failure recorded). */
static const char *copy_str(reader *R, const char *s)
{
    if (!s || !s[0])
        return "";
    char *r = clf__onnx_strndup(&R->m->arena, s, strlen(s));
    if (!r) {
        oom(R);
        return "";
    }
    return r;
}

/* ---- Nesting scan --------------------------------------------------------- */

static bool varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return true;
    }
    return false;
}

/* Whether the message of descriptor d in [p, end) nests no deeper than
 * depth more levels. Malformed bytes return true: protobuf-c refuses them. */
static bool nesting_ok(const ProtobufCMessageDescriptor *d, const uint8_t *p, const uint8_t *end, int depth)
{
    while (p < end) {
        uint64_t key, len;
        if (!varint(&p, end, &key))
            return true;
        switch (key & 7) {
        case 0:
            if (!varint(&p, end, &len))
                return true;
            break;
        case 1: p += (size_t)(end - p) < 8 ? (size_t)(end - p) : 8; break;
        case 5: p += (size_t)(end - p) < 4 ? (size_t)(end - p) : 4; break;
        case 2: {
            if (!varint(&p, end, &len) || len > (uint64_t)(end - p))
                return true;
            const ProtobufCFieldDescriptor *f =
                key >> 3 <= UINT32_MAX ? protobuf_c_message_descriptor_get_field(d, (unsigned)(key >> 3)) : NULL;
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE &&
                (depth == 0 || !nesting_ok(f->descriptor, p, p + len, depth - 1)))
                return false;
            p += len;
            break;
        }
        default: return true; /* groups (3, 4) are not in onnx.proto: protobuf-c refuses them */
        }
    }
    return true;
}

/* ---- Types ----------------------------------------------------------------- */

/* tp into *t; what names the value in messages. strict: the value must be
 * a tensor (inputs, outputs); otherwise other kinds are left undeclared. */
static clf_status convert_type(reader *R, const Onnx__TypeProto *tp, clf__onnx_type *t, const char *what, bool strict)
{
    static const char *kinds[] = {[ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE] = "a sequence",
                                  [ONNX__TYPE_PROTO__VALUE_MAP_TYPE] = "a map",
                                  [ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE] = "a sparse tensor",
                                  [ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE] = "an optional"};
    memset(t, 0, sizeof *t);
    if (!tp)
        return CLF_OK;
    if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type) {
        if (!strict || tp->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET)
            return CLF_OK;
        const char *k = (unsigned)tp->value_case < sizeof kinds / sizeof kinds[0] ? kinds[tp->value_case] : NULL;
        return fail(R, CLF_ERR_UNSUPPORTED, what, "is %s; libclfuse takes tensors", k ? k : "not a tensor");
    }
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    t->elem = tt->has_elem_type ? tt->elem_type : CLF__ONNX_UNDEFINED;
    if (!tt->shape)
        return CLF_OK;
    if (tt->shape->n_dim > CLF__ONNX_MAX_RANK)
        return fail(R, CLF_ERR_UNSUPPORTED, what, "has rank %zu, more than libclfuse's %d", tt->shape->n_dim,
                    CLF__ONNX_MAX_RANK);
    t->has_shape = true;
    t->rank = (int)tt->shape->n_dim;
    for (int d = 0; d < t->rank; d++) {
        const Onnx__TensorShapeProto__Dimension *D = tt->shape->dim[d];
        clf__onnx_dim *out = &t->dims[d];
        if (D->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            if (D->dim_value < 0)
                return fail(R, CLF_ERR_MODEL, what, "dimension %d is %lld", d, (long long)D->dim_value);
            out->value = D->dim_value;
        } else if (D->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && D->dim_param &&
                   D->dim_param[0]) {
            out->param = copy_str(R, D->dim_param);
        } else {
            out->param = "?";
        }
    }
    return R->status;
}

static clf_status convert_value(reader *R, const Onnx__ValueInfoProto *vp, clf__onnx_value *v, const char *kind,
                                bool strict)
{
    char what[160];
    v->name = copy_str(R, vp->name);
    snprintf(what, sizeof what, "%s '%s'", kind, v->name);
    if (!v->name[0])
        return R->status ? R->status : fail(R, CLF_ERR_MODEL, "", "a graph %s has no name", kind);
    return convert_type(R, vp->type, &v->type, what, strict);
}

/* ---- Tensors --------------------------------------------------------------- */

static bool little_endian(void)
{
    uint16_t x = 1;
    unsigned char c;
    memcpy(&c, &x, 1);
    return c == 1;
}

/* Little-endian bytes as host-order elements: the bytes themselves on a
 * little-endian host, else a swapped copy. */
static const void *host_order(reader *R, const void *le, size_t n, size_t esize)
{
    if (little_endian() || esize == 1 || !n)
        return le;
    unsigned char *out = alloc(R, n * esize);
    if (!out)
        return NULL;
    for (size_t k = 0; k < n; k++)
        for (size_t b = 0; b < esize; b++)
            out[k * esize + b] = ((const unsigned char *)le)[k * esize + esize - 1 - b];
    return out;
}

static clf_status parse_int64(reader *R, const char *where, const char *key, const char *s, int64_t *out)
{
    char *end;
    if (!s || !s[0] || s[0] == '-' || s[0] == '+')
        return fail(R, CLF_ERR_MODEL, where, "external data %s '%s' is not a number", key, s ? s : "");
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end || errno == ERANGE)
        return fail(R, CLF_ERR_MODEL, where, "external data %s '%s' is not a number", key, s);
    *out = v;
    return CLF_OK;
}

static clf_status external_data(reader *R, const Onnx__TensorProto *tp, const char *where, size_t bytes,
                                const void **data)
{
    const char *location = NULL;
    int64_t offset = 0, length = -1;
    for (size_t i = 0; i < tp->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = tp->external_data[i];
        if (!e->key)
            continue;
        if (!strcmp(e->key, "location"))
            location = e->value;
        else if (!strcmp(e->key, "offset") && parse_int64(R, where, "offset", e->value, &offset))
            return R->status;
        else if (!strcmp(e->key, "length") && parse_int64(R, where, "length", e->value, &length))
            return R->status;
    }
    if (!location)
        return fail(R, CLF_ERR_MODEL, where, "external data without a 'location'");
    if (!R->base_dir)
        return fail(R, CLF_ERR_MODEL, where, "external data '%s': the model was loaded from memory without a "
                    "folder to read it from", location);
    if (!R->ext && !(R->ext = clf__onnx_external_create(&R->m->arena, R->base_dir)))
        return oom(R);
    char msg[512];
    clf_status st = clf__onnx_external_get(R->ext, location, offset, length, bytes, data, msg, sizeof msg);
    if (st)
        return fail(R, st, where, "%s", msg);
    return CLF_OK;
}

/* The values of an int32_data field in the element type's bytes. */
static clf_status narrow_int32(reader *R, const Onnx__TensorProto *tp, int elem, size_t n, const char *where,
                               const void **data)
{
    size_t esize = clf__onnx_elem_size(elem);
    int64_t lo, hi;
    switch (elem) {
    case CLF__ONNX_INT8: lo = INT8_MIN; hi = INT8_MAX; break;
    case CLF__ONNX_INT16: lo = INT16_MIN; hi = INT16_MAX; break;
    case CLF__ONNX_UINT8: lo = 0; hi = UINT8_MAX; break;
    case CLF__ONNX_BOOL: lo = INT32_MIN; hi = INT32_MAX; break;
    default: lo = 0; hi = UINT16_MAX; break; /* uint16, float16 and bfloat16 bits */
    }
    unsigned char *out = alloc(R, n * esize);
    if (!out)
        return R->status;
    for (size_t k = 0; k < n; k++) {
        int32_t v = tp->int32_data[k];
        if (v < lo || v > hi)
            return fail(R, CLF_ERR_MODEL, where, "int32_data value %d at %zu does not fit in %s", v, k,
                        clf__onnx_elem_name(elem));
        if (esize == 1) {
            out[k] = elem == CLF__ONNX_BOOL ? v != 0 : (unsigned char)v;
        } else {
            uint16_t h = (uint16_t)v;
            memcpy(out + 2 * k, &h, 2);
        }
    }
    *data = out;
    return CLF_OK;
}

/* tp into a new AST tensor; where names it in messages. */
static clf_status convert_tensor(reader *R, const Onnx__TensorProto *tp, const char *name, const char *where,
                                 clf__onnx_tensor **out)
{
    clf__onnx_tensor *T = alloc(R, sizeof *T);
    if (!T)
        return R->status;
    T->name = name;
    int elem = tp->has_data_type ? tp->data_type : CLF__ONNX_UNDEFINED;
    if (elem == CLF__ONNX_UNDEFINED)
        return fail(R, CLF_ERR_MODEL, where, "the tensor has no data_type");
    size_t esize = clf__onnx_elem_size(elem);
    if (!esize)
        return fail(R, CLF_ERR_UNSUPPORTED, where, "%s tensors are not supported",
                    elem == CLF__ONNX_STRING || elem == CLF__ONNX_COMPLEX64 || elem == CLF__ONNX_COMPLEX128
                        ? clf__onnx_elem_name(elem)
                        : "data_type ?");
    if (tp->n_dims > CLF__ONNX_MAX_RANK)
        return fail(R, CLF_ERR_UNSUPPORTED, where, "the tensor has rank %zu, more than libclfuse's %d", tp->n_dims,
                    CLF__ONNX_MAX_RANK);
    if (tp->segment)
        return fail(R, CLF_ERR_UNSUPPORTED, where, "segmented tensors are not supported");
    T->type = (clf__onnx_type){.elem = elem, .has_shape = true, .rank = (int)tp->n_dims};
    size_t n = 1;
    for (size_t d = 0; d < tp->n_dims; d++) {
        int64_t e = tp->dims[d];
        if (e < 0)
            return fail(R, CLF_ERR_MODEL, where, "dimension %zu of the tensor is %lld", d, (long long)e);
        if (e && n > SIZE_MAX / esize / (uint64_t)e)
            return fail(R, CLF_ERR_MODEL, where, "the tensor's shape is too large");
        n *= (size_t)e;
        T->type.dims[d].value = e;
    }
    T->n = n;
    size_t bytes = n * esize;
    const void *data = NULL;
    /* Which typed field holds elem's values, and how many it has. */
    size_t typed = 0;
    const char *field = NULL;
    switch (elem) {
    case CLF__ONNX_FLOAT: typed = tp->n_float_data; field = "float_data"; break;
    case CLF__ONNX_INT64: typed = tp->n_int64_data; field = "int64_data"; break;
    case CLF__ONNX_DOUBLE: typed = tp->n_double_data; field = "double_data"; break;
    case CLF__ONNX_UINT32: case CLF__ONNX_UINT64: typed = tp->n_uint64_data; field = "uint64_data"; break;
    default: typed = tp->n_int32_data; field = "int32_data"; break;
    }
    size_t others = tp->n_float_data + tp->n_int32_data + tp->n_int64_data + tp->n_double_data +
                    tp->n_uint64_data + tp->n_string_data - typed;
    if (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
        if (external_data(R, tp, where, bytes, &data))
            return R->status;
        data = host_order(R, data, n, esize);
    } else if (tp->has_raw_data) {
        if (tp->raw_data.len != bytes)
            return fail(R, CLF_ERR_MODEL, where, "raw_data holds %zu bytes but a %s tensor of %zu elements needs %zu",
                        tp->raw_data.len, clf__onnx_elem_name(elem), n, bytes);
        data = host_order(R, tp->raw_data.data, n, esize);
    } else if (others) {
        return fail(R, CLF_ERR_MODEL, where, "%s values must be in %s or raw_data", clf__onnx_elem_name(elem),
                    field);
    } else if (typed != n) {
        return fail(R, CLF_ERR_MODEL, where, "%s holds %zu values but the tensor's shape has %zu", field, typed, n);
    } else if (n) {
        switch (elem) {
        case CLF__ONNX_FLOAT: data = tp->float_data; break;
        case CLF__ONNX_INT32: data = tp->int32_data; break;
        case CLF__ONNX_INT64: data = tp->int64_data; break;
        case CLF__ONNX_DOUBLE: data = tp->double_data; break;
        case CLF__ONNX_UINT64: data = tp->uint64_data; break;
        case CLF__ONNX_UINT32: {
            uint32_t *u = alloc(R, n * sizeof *u);
            if (!u)
                return R->status;
            for (size_t k = 0; k < n; k++) {
                if (tp->uint64_data[k] > UINT32_MAX)
                    return fail(R, CLF_ERR_MODEL, where, "uint64_data value %llu at %zu does not fit in uint32",
                                (unsigned long long)tp->uint64_data[k], k);
                u[k] = (uint32_t)tp->uint64_data[k];
            }
            data = u;
            break;
        }
        default:
            if (narrow_int32(R, tp, elem, n, where, &data))
                return R->status;
            break;
        }
    }
    if (R->status)
        return R->status;
    T->data = n ? data : NULL;
    *out = T;
    return CLF_OK;
}

/* ---- Nodes ----------------------------------------------------------------- */

static clf__onnx_attr_kind kind_of(const Onnx__AttributeProto *ap, bool *known)
{
    *known = true;
    switch (ap->has_type ? ap->type : ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: return CLF__ONNX_ATTR_FLOAT;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: return CLF__ONNX_ATTR_INT;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: return CLF__ONNX_ATTR_STRING;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: return CLF__ONNX_ATTR_TENSOR;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: return CLF__ONNX_ATTR_FLOATS;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS: return CLF__ONNX_ATTR_INTS;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS: return CLF__ONNX_ATTR_STRINGS;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED:
        /* IR 1 had no type field: the field that is set says. */
        if (ap->has_f) return CLF__ONNX_ATTR_FLOAT;
        if (ap->has_i) return CLF__ONNX_ATTR_INT;
        if (ap->has_s) return CLF__ONNX_ATTR_STRING;
        if (ap->t) return CLF__ONNX_ATTR_TENSOR;
        if (ap->n_floats) return CLF__ONNX_ATTR_FLOATS;
        if (ap->n_ints) return CLF__ONNX_ATTR_INTS;
        if (ap->n_strings) return CLF__ONNX_ATTR_STRINGS;
        break;
    default:
        break;
    }
    *known = false;
    return CLF__ONNX_ATTR_INT;
}

static const char *attr_type_name(const Onnx__AttributeProto *ap)
{
    if (ap->g || ap->n_graphs || (ap->has_type && (ap->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH ||
                                                   ap->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS)))
        return "graph";
    if (ap->sparse_tensor || ap->n_sparse_tensors)
        return "sparse tensor";
    if (ap->n_tensors)
        return "tensor list";
    if (ap->tp || ap->n_type_protos)
        return "type";
    return NULL;
}

/* A string attribute's bytes, NUL-terminated; refuses an embedded NUL. */
static const char *copy_bytes(reader *R, const ProtobufCBinaryData *b, const char *where, const char *attr)
{
    if (b->len && memchr(b->data, 0, b->len)) {
        fail(R, CLF_ERR_MODEL, where, "attribute '%s' holds a string with a NUL byte", attr);
        return NULL;
    }
    char *s = clf__onnx_strndup(&R->m->arena, b->len ? (const char *)b->data : "", b->len);
    if (!s)
        oom(R);
    return s;
}

static clf_status convert_attr(reader *R, const Onnx__AttributeProto *ap, clf__onnx_attr *a, const char *where)
{
    a->name = copy_str(R, ap->name);
    if (!a->name[0])
        return fail(R, CLF_ERR_MODEL, where, "an attribute has no name");
    if (ap->ref_attr_name && ap->ref_attr_name[0]) {
        a->kind = CLF__ONNX_ATTR_REF;
        a->s = copy_str(R, ap->ref_attr_name);
        return R->status;
    }
    bool known;
    a->kind = kind_of(ap, &known);
    if (!known) {
        const char *t = attr_type_name(ap);
        if (t && !strcmp(t, "graph"))
            return fail(R, CLF_ERR_UNSUPPORTED, where, "attribute '%s' is a graph: graph-valued attributes (If, Loop, "
                        "Scan bodies) are not supported", a->name);
        if (t)
            return fail(R, CLF_ERR_UNSUPPORTED, where, "attribute '%s' is a %s, which libclfuse does not read",
                        a->name, t);
        return fail(R, CLF_ERR_MODEL, where, "attribute '%s' has no value (or an unknown type %d)", a->name,
                    ap->has_type ? (int)ap->type : 0);
    }
    switch (a->kind) {
    case CLF__ONNX_ATTR_FLOAT: a->f = ap->f; break;
    case CLF__ONNX_ATTR_INT: a->i = ap->i; a->f = (double)ap->i; break;
    case CLF__ONNX_ATTR_STRING: a->s = copy_bytes(R, &ap->s, where, a->name); break;
    case CLF__ONNX_ATTR_TENSOR: {
        if (!ap->t)
            return fail(R, CLF_ERR_MODEL, where, "attribute '%s' is a tensor but holds none", a->name);
        char twhere[320];
        snprintf(twhere, sizeof twhere, "%s: attribute '%s'", where, a->name);
        return convert_tensor(R, ap->t, a->name, twhere, &a->t);
    }
    case CLF__ONNX_ATTR_FLOATS:
    case CLF__ONNX_ATTR_INTS: {
        bool ints = a->kind == CLF__ONNX_ATTR_INTS;
        a->n = ints ? ap->n_ints : ap->n_floats;
        a->floats = alloc(R, a->n * sizeof *a->floats);
        if (ints)
            a->ints = alloc(R, a->n * sizeof *a->ints);
        if (R->status)
            return R->status;
        for (size_t k = 0; k < a->n; k++) {
            a->floats[k] = ints ? (double)ap->ints[k] : ap->floats[k];
            if (ints)
                a->ints[k] = ap->ints[k];
        }
        break;
    }
    case CLF__ONNX_ATTR_STRINGS:
        a->n = ap->n_strings;
        a->strings = alloc(R, a->n * sizeof *a->strings);
        for (size_t k = 0; !R->status && k < a->n; k++)
            a->strings[k] = copy_bytes(R, &ap->strings[k], where, a->name);
        break;
    default:
        break;
    }
    return R->status;
}

static clf_status convert_node(reader *R, const Onnx__NodeProto *np, int index)
{
    clf__onnx_node *n = &R->m->nodes[index];
    char where[256];
    n->name = copy_str(R, np->name);
    n->domain = copy_str(R, np->domain);
    n->op = copy_str(R, np->op_type);
    if (R->status)
        return R->status;
    if (!n->op[0]) {
        snprintf(where, sizeof where, "node %d%s%s%s", index, n->name[0] ? " '" : "", n->name, n->name[0] ? "'" : "");
        return fail(R, CLF_ERR_MODEL, where, "the node has no op_type");
    }
    clf__onnx_node_label(R->m, index, where, sizeof where);
    if (np->n_input > INT32_MAX || np->n_output > INT32_MAX || np->n_attribute > INT32_MAX)
        return fail(R, CLF_ERR_MODEL, where, "too many inputs, outputs or attributes");
    n->ninputs = (int)np->n_input;
    n->noutputs = (int)np->n_output;
    n->inputs = alloc(R, np->n_input * sizeof *n->inputs);
    n->outputs = alloc(R, np->n_output * sizeof *n->outputs);
    n->attrs = alloc(R, np->n_attribute * sizeof *n->attrs);
    for (size_t j = 0; !R->status && j < np->n_input; j++)
        n->inputs[j] = copy_str(R, np->input[j]);
    for (size_t j = 0; !R->status && j < np->n_output; j++)
        n->outputs[j] = copy_str(R, np->output[j]);
    for (size_t j = 0; !R->status && j < np->n_attribute; j++) {
        if (convert_attr(R, np->attribute[j], &n->attrs[j], where))
            break;
        for (size_t i = 0; i < j; i++)
            if (!strcmp(n->attrs[i].name, n->attrs[j].name))
                return fail(R, CLF_ERR_MODEL, where, "attribute '%s' is given twice", n->attrs[j].name);
        n->nattrs++;
    }
    return R->status;
}

/* ---- The model --------------------------------------------------------------- */

/* An initializer and its position, sorted by name. */
typedef struct named_init {
    const char *name;
    size_t index;
} named_init;

static int cmp_init(const void *a, const void *b)
{
    return strcmp(((const named_init *)a)->name, ((const named_init *)b)->name);
}

/* The index of the initializer named name, or -1. */
static ptrdiff_t find_init(const named_init *sorted, size_t n, const char *name)
{
    named_init key = {name, 0};
    const named_init *hit = n ? bsearch(&key, sorted, n, sizeof *sorted, cmp_init) : NULL;
    return hit ? (ptrdiff_t)hit->index : -1;
}

static clf_status convert_graph(reader *R, const Onnx__GraphProto *gp)
{
    clf__onnx_model *m = R->m;
    char where[320];
    if (gp->n_sparse_initializer)
        return fail(R, CLF_ERR_UNSUPPORTED, "", "sparse initializers are not supported");
    if (gp->n_node > INT32_MAX || gp->n_input > INT32_MAX || gp->n_output > INT32_MAX ||
        gp->n_initializer + gp->n_value_info > INT32_MAX)
        return fail(R, CLF_ERR_MODEL, "", "the graph is too large");
    m->name = copy_str(R, gp->name);
    /* Initializers by name, for the inputs that are initializers. */
    named_init *sorted = alloc(R, gp->n_initializer * sizeof *sorted);
    clf__onnx_tensor **converted = alloc(R, gp->n_initializer * sizeof *converted);
    if (R->status)
        return R->status;
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        if (!tp->name || !tp->name[0])
            return fail(R, CLF_ERR_MODEL, "", "initializer %zu has no name", i);
        snprintf(where, sizeof where, "initializer '%s'", tp->name);
        if (convert_tensor(R, tp, copy_str(R, tp->name), where, &converted[i]))
            return R->status;
        sorted[i] = (named_init){converted[i]->name, i};
    }
    qsort(sorted, gp->n_initializer, sizeof *sorted, cmp_init);
    for (size_t i = 1; i < gp->n_initializer; i++)
        if (!cmp_init(&sorted[i - 1], &sorted[i]))
            return fail(R, CLF_ERR_MODEL, "", "initializer '%s' is given twice", sorted[i].name);
    bool *listed = alloc(R, gp->n_initializer * sizeof *listed);
    m->inputs = alloc(R, gp->n_input * sizeof *m->inputs);
    m->outputs = alloc(R, gp->n_output * sizeof *m->outputs);
    m->extras = alloc(R, (gp->n_initializer + gp->n_value_info) * sizeof *m->extras);
    m->nodes = alloc(R, gp->n_node * sizeof *m->nodes);
    if (R->status)
        return R->status;
    for (size_t i = 0; i < gp->n_input; i++) {
        clf__onnx_value *v = &m->inputs[i];
        m->ninputs++;
        v->name = copy_str(R, gp->input[i]->name);
        ptrdiff_t k = v->name[0] ? find_init(sorted, gp->n_initializer, v->name) : -1;
        if (k >= 0) { /* an initializer listed as an input: a constant here */
            listed[k] = true;
            v->init = converted[k];
            v->type = v->init->type;
            continue;
        }
        if (convert_value(R, gp->input[i], v, "input", true))
            return R->status;
        if (v->type.elem == CLF__ONNX_UNDEFINED) {
            snprintf(where, sizeof where, "input '%s'", v->name);
            return fail(R, CLF_ERR_MODEL, where, "has no tensor type");
        }
    }
    for (size_t i = 0; i < gp->n_output; i++) {
        m->noutputs++;
        if (convert_value(R, gp->output[i], &m->outputs[i], "output", true))
            return R->status;
    }
    for (size_t i = 0; i < gp->n_initializer; i++)
        if (!listed[i]) {
            clf__onnx_value *v = &m->extras[m->nextras++];
            v->init = converted[i];
            v->name = v->init->name;
            v->type = v->init->type;
        }
    for (size_t i = 0; i < gp->n_value_info; i++)
        if (convert_value(R, gp->value_info[i], &m->extras[m->nextras++], "value_info", false))
            return R->status;
    for (size_t k = 0; k < gp->n_node; k++) {
        m->nnodes++;
        if (convert_node(R, gp->node[k], (int)k))
            return R->status;
    }
    return R->status;
}

static void *pb_alloc(void *ud, size_t size)
{
    (void)ud;
    return clf__malloc(size);
}

static void pb_free(void *ud, void *p)
{
    (void)ud;
    clf__free(p);
}

static ProtobufCAllocator pb_allocator = {pb_alloc, pb_free, NULL};

static void free_message(void *msg) { onnx__model_proto__free_unpacked(msg, &pb_allocator); }

clf_status clf__onnx_read_binary(const void *data, size_t size, const char *base_dir, clf__onnx_model *out,
                                 char *err, size_t cap)
{
    memset(out, 0, sizeof *out);
    out->ir_version = -1;
    out->opset = -1;
    out->format = CLF_ONNX_FORMAT_BINARY;
    out->name = out->producer = "";
    reader R = {.m = out, .base_dir = base_dir, .err = err, .cap = cap};
    if (cap)
        err[0] = 0;
    if (!nesting_ok(&onnx__model_proto__descriptor, data, (const uint8_t *)data + size, MAX_NESTING))
        return fail(&R, CLF_ERR_MODEL, "", "not a model libclfuse reads: messages nest more than %d deep",
                    MAX_NESTING);
    unsigned long failures = clf__alloc_failures();
    Onnx__ModelProto *mp = onnx__model_proto__unpack(&pb_allocator, size, data);
    if (!mp) {
        if (clf__alloc_failures() != failures)
            return oom(&R);
        return fail(&R, CLF_ERR_MODEL, "", "not an ONNX model: protobuf-c cannot decode a ModelProto from its %zu "
                    "bytes (truncated or corrupt)", size);
    }
    if (!clf__onnx_defer(&out->arena, free_message, mp)) {
        free_message(mp);
        oom(&R);
        goto done;
    }
    if (!mp->has_ir_version) {
        fail(&R, CLF_ERR_MODEL, "", "not an ONNX model: it has no ir_version");
        goto done;
    }
    out->ir_version = mp->ir_version;
    if (mp->ir_version < CLF__ONNX_MIN_IR_VERSION || mp->ir_version > CLF__ONNX_MAX_IR_VERSION) {
        fail(&R, CLF_ERR_MODEL, "", "ir_version %lld is not one libclfuse reads (%d to %d)",
             (long long)mp->ir_version, CLF__ONNX_MIN_IR_VERSION, CLF__ONNX_MAX_IR_VERSION);
        goto done;
    }
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = mp->opset_import[i];
        if ((!o->domain || !o->domain[0] || !strcmp(o->domain, "ai.onnx")) && o->has_version)
            out->opset = o->version;
    }
    /* ONNX requires one; every op libclfuse knows is of the default domain. */
    if (out->opset < 0) {
        /* Another domain only (a training or contrib model) is a valid model
         * libclfuse cannot run; no opset at all is not a valid model. */
        fail(&R, mp->n_opset_import ? CLF_ERR_UNSUPPORTED : CLF_ERR_MODEL, "",
             "the model imports no opset of the default ONNX domain (opset_import \"\" or \"ai.onnx\")%s",
             mp->n_opset_import ? "; libclfuse runs only that domain's ops" : "");
        goto done;
    }
    out->producer = copy_str(&R, mp->producer_name);
    if (!mp->graph) {
        fail(&R, CLF_ERR_MODEL, "", "the model has no graph");
        goto done;
    }
    convert_graph(&R, mp->graph);
done:
    if (R.status)
        clf__onnx_ast_free(out);
    return R.status;
}
