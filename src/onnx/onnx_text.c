/* Lexer and recursive-descent parser for the ONNX textual syntax; see
 * onnx_text_parser.h for the grammar it accepts. Errors stop at the first
 * problem and say where it is and what was expected there. */
#include "onnx_ast.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Arena --------------------------------------------------------------- */

typedef struct onnx_arena {
    struct onnx_arena *next;
    size_t used, cap;
    max_align_t data[];
} onnx_arena;

/* ---- Lexer --------------------------------------------------------------- */

typedef enum tok_kind {
    T_EOF,
    T_IDENT,
    T_INT,
    T_FLOAT,
    T_STRING,
    T_ARROW, /* => */
    T_PUNCT, /* one of ( ) [ ] { } < > , = : @ ? */
} tok_kind;

typedef struct token {
    tok_kind kind;
    char punct;
    const char *start;
    size_t len;
    int64_t i;
    double f;
    onnx_pos pos;
} token;

typedef struct parser {
    const char *p, *end;
    int line;
    const char *line_start;
    token tok; /* the current token */
    onnx_arena *arena;
    char *err;
    size_t cap;
    jmp_buf fail;
    int fail_code;
} parser;

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4), noreturn))
#endif
static void fail_at(parser *P, onnx_pos pos, const char *fmt, ...)
{
    int n = snprintf(P->err, P->cap, "%d:%d: ", pos.line, pos.col);
    if (n >= 0 && (size_t)n < P->cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(P->err + n, P->cap - (size_t)n, fmt, ap);
        va_end(ap);
    }
    P->fail_code = -1;
    longjmp(P->fail, 1);
}

static void *alloc(parser *P, size_t size)
{
    size = (size + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    if (!size)
        size = sizeof(max_align_t);
    onnx_arena *a = P->arena;
    if (!a || a->cap - a->used < size) {
        size_t cap = size > 16384 ? size : 16384;
        onnx_arena *b = malloc(sizeof *b + cap);
        if (!b) {
            snprintf(P->err, P->cap, "out of memory");
            P->fail_code = -2;
            longjmp(P->fail, 1);
        }
        b->next = a;
        b->used = 0;
        b->cap = cap;
        P->arena = a = b;
    }
    void *r = (char *)a->data + a->used;
    a->used += size;
    memset(r, 0, size);
    return r;
}

static const char *strndup_a(parser *P, const char *s, size_t n)
{
    char *r = alloc(P, n + 1);
    memcpy(r, s, n);
    r[n] = 0;
    return r;
}

/* A growable array in the arena: grows by copying (the old block is left
 * in the arena), which is fine for the sizes models have. */
static void *grow(parser *P, void *v, size_t n, size_t *cap, size_t elem)
{
    if (n < *cap)
        return v;
    size_t nc = *cap ? *cap * 2 : 8;
    if (nc > SIZE_MAX / elem) {
        snprintf(P->err, P->cap, "out of memory");
        P->fail_code = -2;
        longjmp(P->fail, 1);
    }
    void *r = alloc(P, nc * elem);
    if (v)
        memcpy(r, v, n * elem);
    *cap = nc;
    return r;
}

static onnx_pos here(const parser *P) { return (onnx_pos){P->line, (int)(P->p - P->line_start) + 1}; }

static bool is_ident_start(int c) { return isalpha(c) || c == '_'; }
static bool is_ident_char(int c) { return isalnum(c) || c == '_' || c == '.' || c == '/'; }

static void describe(const token *t, char *buf, size_t cap)
{
    switch (t->kind) {
    case T_EOF: snprintf(buf, cap, "end of file"); break;
    case T_ARROW: snprintf(buf, cap, "'=>'"); break;
    case T_PUNCT: snprintf(buf, cap, "'%c'", t->punct); break;
    case T_STRING: snprintf(buf, cap, "a string"); break;
    default: snprintf(buf, cap, "'%.*s'", (int)(t->len > 40 ? 40 : t->len), t->start); break;
    }
}

/* Reads the next token into P->tok. */
static void next(parser *P)
{
    for (;;) {
        while (P->p < P->end && isspace((unsigned char)*P->p)) {
            if (*P->p == '\n') {
                P->line++;
                P->line_start = P->p + 1;
            }
            P->p++;
        }
        if (P->p < P->end && *P->p == '#') {
            while (P->p < P->end && *P->p != '\n')
                P->p++;
            continue;
        }
        break;
    }
    token *t = &P->tok;
    memset(t, 0, sizeof *t);
    t->pos = here(P);
    t->start = P->p;
    if (P->p >= P->end) {
        t->kind = T_EOF;
        return;
    }
    int c = (unsigned char)*P->p;
    if (is_ident_start(c)) {
        while (P->p < P->end && is_ident_char((unsigned char)*P->p))
            P->p++;
        t->kind = T_IDENT;
        t->len = (size_t)(P->p - t->start);
        return;
    }
    if ((c == '-' || c == '+') && P->end - P->p >= 4 && !memcmp(P->p + 1, "inf", 3) &&
        (P->end - P->p == 4 || !is_ident_char((unsigned char)P->p[4]))) {
        t->kind = T_FLOAT;
        t->f = c == '-' ? -(double)INFINITY : (double)INFINITY;
        t->len = 4;
        P->p += 4;
        return;
    }
    if (isdigit(c) || ((c == '-' || c == '+' || c == '.') && P->p + 1 < P->end &&
                       (isdigit((unsigned char)P->p[1]) || P->p[1] == '.'))) {
        const char *q = P->p;
        if (*q == '-' || *q == '+')
            q++;
        bool is_float = false;
        while (q < P->end && isdigit((unsigned char)*q))
            q++;
        if (q < P->end && *q == '.') {
            is_float = true;
            q++;
            while (q < P->end && isdigit((unsigned char)*q))
                q++;
        }
        if (q < P->end && (*q == 'e' || *q == 'E')) {
            const char *e = q + 1;
            if (e < P->end && (*e == '-' || *e == '+'))
                e++;
            if (e < P->end && isdigit((unsigned char)*e)) {
                is_float = true;
                q = e;
                while (q < P->end && isdigit((unsigned char)*q))
                    q++;
            }
        }
        char buf[128];
        size_t n = (size_t)(q - P->p);
        if (n >= sizeof buf)
            fail_at(P, t->pos, "number too long");
        memcpy(buf, P->p, n);
        buf[n] = 0;
        errno = 0;
        if (is_float) {
            t->kind = T_FLOAT;
            t->f = strtod(buf, NULL);
        } else {
            t->kind = T_INT;
            t->i = strtoll(buf, NULL, 10);
            t->f = (double)t->i;
            if (errno == ERANGE)
                fail_at(P, t->pos, "integer %s does not fit in 64 bits", buf);
        }
        P->p = q;
        t->len = n;
        if (q < P->end && is_ident_char((unsigned char)*q))
            fail_at(P, here(P), "unexpected '%c' after the number %s", *q, buf);
        return;
    }
    if (c == '"') {
        const char *q = P->p + 1;
        while (q < P->end && *q != '"' && *q != '\n') {
            if (*q == '\\' && q + 1 < P->end)
                q++;
            q++;
        }
        if (q >= P->end || *q != '"')
            fail_at(P, t->pos, "unterminated string");
        t->kind = T_STRING;
        t->start = P->p + 1;
        t->len = (size_t)(q - P->p - 1);
        P->p = q + 1;
        return;
    }
    if (c == '=' && P->p + 1 < P->end && P->p[1] == '>') {
        t->kind = T_ARROW;
        P->p += 2;
        t->len = 2;
        return;
    }
    if (strchr("()[]{}<>,=:@?", c)) {
        t->kind = T_PUNCT;
        t->punct = (char)c;
        t->len = 1;
        P->p++;
        return;
    }
    if (isprint(c))
        fail_at(P, t->pos, "unexpected character '%c'", c);
    fail_at(P, t->pos, "unexpected byte 0x%02x", (unsigned)c);
}

static bool is_punct(const parser *P, char c) { return P->tok.kind == T_PUNCT && P->tok.punct == c; }

static bool accept(parser *P, char c)
{
    if (!is_punct(P, c))
        return false;
    next(P);
    return true;
}

/* Consumes punctuation c or fails with "expected 'c' <context>". */
static void expect(parser *P, char c, const char *context)
{
    if (accept(P, c))
        return;
    char got[64];
    describe(&P->tok, got, sizeof got);
    fail_at(P, P->tok.pos, "expected '%c' %s, found %s", c, context, got);
}

static const char *expect_ident(parser *P, const char *what)
{
    if (P->tok.kind != T_IDENT) {
        char got[64];
        describe(&P->tok, got, sizeof got);
        fail_at(P, P->tok.pos, "expected %s, found %s", what, got);
    }
    const char *s = strndup_a(P, P->tok.start, P->tok.len);
    next(P);
    return s;
}

static bool tok_is(const parser *P, const char *word)
{
    return P->tok.kind == T_IDENT && P->tok.len == strlen(word) && !memcmp(P->tok.start, word, P->tok.len);
}

/* ---- Types and literals -------------------------------------------------- */

static const struct {
    const char *name;
    int elem;
} elem_names[] = {
    {"float", ONNX_FLOAT},   {"uint8", ONNX_UINT8},     {"int8", ONNX_INT8},       {"uint16", ONNX_UINT16},
    {"int16", ONNX_INT16},   {"int32", ONNX_INT32},     {"int64", ONNX_INT64},     {"string", ONNX_STRING},
    {"bool", ONNX_BOOL},     {"float16", ONNX_FLOAT16}, {"double", ONNX_DOUBLE},   {"uint32", ONNX_UINT32},
    {"uint64", ONNX_UINT64}, {"bfloat16", ONNX_BFLOAT16},
};

const char *onnx_elem_name(int elem)
{
    for (size_t i = 0; i < sizeof elem_names / sizeof elem_names[0]; i++)
        if (elem_names[i].elem == elem)
            return elem_names[i].name;
    return "?";
}

bool onnx_elem_is_float(int elem)
{
    return elem == ONNX_FLOAT || elem == ONNX_DOUBLE || elem == ONNX_FLOAT16 || elem == ONNX_BFLOAT16;
}

static int elem_of_token(const parser *P)
{
    if (P->tok.kind != T_IDENT)
        return ONNX_UNDEFINED;
    for (size_t i = 0; i < sizeof elem_names / sizeof elem_names[0]; i++)
        if (tok_is(P, elem_names[i].name))
            return elem_names[i].elem;
    return ONNX_UNDEFINED;
}

/* type := elem [ '[' dim {, dim} ']' ] */
static onnx_type parse_type(parser *P, const char *what)
{
    onnx_type t = {.pos = P->tok.pos};
    t.elem = elem_of_token(P);
    if (t.elem == ONNX_UNDEFINED) {
        char got[64];
        describe(&P->tok, got, sizeof got);
        if (P->tok.kind == T_IDENT && (tok_is(P, "seq") || tok_is(P, "map") || tok_is(P, "optional")))
            fail_at(P, P->tok.pos, "%s: sequence, map and optional types are not supported", got);
        fail_at(P, P->tok.pos, "expected a type (float, int32, int64, bool, ...) for %s, found %s", what, got);
    }
    next(P);
    if (!accept(P, '['))
        return t;
    t.has_shape = true;
    if (accept(P, ']'))
        return t;
    for (;;) {
        if (t.rank == ONNX_MAX_RANK)
            fail_at(P, P->tok.pos, "more than %d dimensions", ONNX_MAX_RANK);
        onnx_dim *d = &t.dims[t.rank++];
        if (P->tok.kind == T_INT) {
            if (P->tok.i < 0)
                fail_at(P, P->tok.pos, "a dimension must not be negative");
            d->value = P->tok.i;
            next(P);
        } else if (P->tok.kind == T_IDENT) {
            d->param = expect_ident(P, "a dimension");
        } else if (accept(P, '?')) {
            d->param = "?";
        } else {
            char got[64];
            describe(&P->tok, got, sizeof got);
            fail_at(P, P->tok.pos, "expected a dimension (a number or a name such as N), found %s", got);
        }
        if (accept(P, ']'))
            return t;
        expect(P, ',', "or ']' in the shape");
    }
}

static double number_value(parser *P, bool *is_int, int64_t *ival)
{
    if (P->tok.kind == T_INT || P->tok.kind == T_FLOAT) {
        *is_int = P->tok.kind == T_INT;
        *ival = P->tok.i;
        double v = P->tok.f;
        next(P);
        return v;
    }
    /* inf and nan are identifiers to the lexer; -inf is a number. */
    onnx_pos pos = P->tok.pos;
    if (P->tok.kind == T_IDENT && (tok_is(P, "inf") || tok_is(P, "nan") || tok_is(P, "infinity"))) {
        *is_int = false;
        double v = tok_is(P, "nan") ? (double)NAN : (double)INFINITY;
        next(P);
        return v;
    }
    char got[64];
    describe(&P->tok, got, sizeof got);
    fail_at(P, pos, "expected a number, found %s", got);
}

/* '{' values '}' for a tensor of type t; the count must match the shape. */
static onnx_tensor *parse_tensor_values(parser *P, onnx_type t)
{
    onnx_tensor *T = alloc(P, sizeof *T);
    T->type = t;
    if (!t.has_shape)
        t.has_shape = T->type.has_shape = true; /* "float {1.5}" is a scalar */
    size_t want = 1;
    for (int d = 0; d < t.rank; d++) {
        if (t.dims[d].param)
            fail_at(P, t.pos, "a tensor literal needs numeric dimensions");
        if (t.dims[d].value && want > SIZE_MAX / 16 / (size_t)t.dims[d].value)
            fail_at(P, t.pos, "tensor literal too large");
        want *= (size_t)t.dims[d].value;
    }
    if (t.elem == ONNX_STRING)
        fail_at(P, t.pos, "string tensors are not supported");
    bool fl = onnx_elem_is_float(t.elem);
    onnx_pos open = P->tok.pos;
    expect(P, '{', "to start the tensor's values");
    size_t n = 0;
    if (fl)
        T->f = alloc(P, (want ? want : 1) * sizeof *T->f);
    else
        T->i = alloc(P, (want ? want : 1) * sizeof *T->i);
    if (!is_punct(P, '}')) {
        for (;;) {
            onnx_pos pos = P->tok.pos;
            bool is_int;
            int64_t iv = 0;
            double v = number_value(P, &is_int, &iv);
            if (n == want)
                fail_at(P, pos, "more values than the %zu of a %s tensor of this shape", want,
                        onnx_elem_name(t.elem));
            if (fl)
                T->f[n] = v;
            else if (!is_int)
                fail_at(P, pos, "expected an integer in a %s tensor", onnx_elem_name(t.elem));
            else
                T->i[n] = iv;
            n++;
            if (is_punct(P, '}'))
                break;
            expect(P, ',', "or '}' between tensor values");
        }
    }
    if (n != want)
        fail_at(P, open, "the tensor's shape holds %zu values but %zu are given", want, n);
    expect(P, '}', "to end the tensor's values");
    T->n = n;
    return T;
}

/* ---- Attributes ------------------------------------------------------------ */

static void parse_attr_value(parser *P, onnx_attr *a)
{
    if (P->tok.kind == T_INT) {
        a->kind = ONNX_ATTR_INT;
        a->i = P->tok.i;
        a->f = P->tok.f;
        next(P);
    } else if (P->tok.kind == T_FLOAT || tok_is(P, "inf") || tok_is(P, "nan")) {
        bool is_int;
        int64_t iv;
        a->kind = ONNX_ATTR_FLOAT;
        a->f = number_value(P, &is_int, &iv);
    } else if (P->tok.kind == T_STRING) {
        a->kind = ONNX_ATTR_STRING;
        a->s = strndup_a(P, P->tok.start, P->tok.len);
        next(P);
    } else if (accept(P, '@')) {
        a->kind = ONNX_ATTR_REF;
        a->s = expect_ident(P, "an attribute name after '@'");
    } else if (accept(P, '[')) {
        size_t cap = 0;
        a->kind = ONNX_ATTR_INTS;
        bool any_float = false, any_string = false;
        double *f = NULL;
        int64_t *iv = NULL;
        const char **s = NULL;
        size_t capf = 0, caps = 0;
        if (!is_punct(P, ']')) {
            for (;;) {
                onnx_pos pos = P->tok.pos;
                iv = grow(P, iv, a->n, &cap, sizeof *iv);
                f = grow(P, f, a->n, &capf, sizeof *f);
                s = grow(P, s, a->n, &caps, sizeof *s);
                if (P->tok.kind == T_STRING) {
                    if (a->n && !any_string)
                        fail_at(P, pos, "a list mixes strings and numbers");
                    any_string = true;
                    s[a->n] = strndup_a(P, P->tok.start, P->tok.len);
                    next(P);
                } else {
                    if (any_string)
                        fail_at(P, pos, "a list mixes strings and numbers");
                    bool is_int;
                    f[a->n] = number_value(P, &is_int, &iv[a->n]);
                    any_float |= !is_int;
                }
                a->n++;
                if (is_punct(P, ']'))
                    break;
                expect(P, ',', "or ']' in the list");
            }
        }
        expect(P, ']', "to end the list");
        a->kind = any_string ? ONNX_ATTR_STRINGS : any_float ? ONNX_ATTR_FLOATS : ONNX_ATTR_INTS;
        a->ints = iv;
        a->floats = f;
        a->strings = s;
    } else if (elem_of_token(P) != ONNX_UNDEFINED) {
        onnx_type t = parse_type(P, "the tensor attribute");
        a->kind = ONNX_ATTR_TENSOR;
        a->t = parse_tensor_values(P, t);
    } else if (is_punct(P, '{')) {
        fail_at(P, P->tok.pos, "graph-valued attributes (If, Loop, Scan bodies) are not supported");
    } else {
        char got[64];
        describe(&P->tok, got, sizeof got);
        fail_at(P, P->tok.pos, "expected an attribute value (number, string, list or tensor), found %s", got);
    }
}

static const char *attr_types[] = {"int", "float", "string", "ints", "floats", "strings", "tensor", "graph",
                                   "tensors", "graphs"};

/* '<' attr {, attr} '>' where attr := name [: type] = value */
static void parse_attrs(parser *P, onnx_node *n)
{
    size_t cap = 0;
    if (accept(P, '>'))
        return;
    for (;;) {
        n->attrs = grow(P, n->attrs, (size_t)n->nattrs, &cap, sizeof *n->attrs);
        onnx_attr *a = &n->attrs[n->nattrs];
        a->pos = P->tok.pos;
        a->name = expect_ident(P, "an attribute name");
        for (int j = 0; j < n->nattrs; j++)
            if (!strcmp(n->attrs[j].name, a->name))
                fail_at(P, a->pos, "attribute '%s' given twice", a->name);
        if (accept(P, ':')) {
            bool known = false;
            for (size_t j = 0; j < sizeof attr_types / sizeof attr_types[0]; j++)
                known |= tok_is(P, attr_types[j]);
            if (!known) {
                char got[64];
                describe(&P->tok, got, sizeof got);
                fail_at(P, P->tok.pos, "expected an attribute type (int, float, ints, ...), found %s", got);
            }
            next(P);
        }
        expect(P, '=', "after the attribute name");
        parse_attr_value(P, a);
        n->nattrs++;
        if (accept(P, '>'))
            return;
        expect(P, ',', "or '>' after the attribute");
    }
}

/* ---- Graph ----------------------------------------------------------------- */

/* '(' [value {, value}] ')' or '<' ... '>' where value := type name [= {values}] */
static void parse_values(parser *P, char close, bool inits_ok, const char *what, onnx_value **out, int *nout)
{
    size_t cap = 0;
    if (accept(P, close))
        return;
    for (;;) {
        *out = grow(P, *out, (size_t)*nout, &cap, sizeof **out);
        onnx_value *v = &(*out)[*nout];
        v->type = parse_type(P, what);
        v->pos = P->tok.pos;
        v->name = expect_ident(P, "a name after the type");
        if (is_punct(P, '=')) {
            if (!inits_ok)
                fail_at(P, P->tok.pos, "an output cannot have a value");
            next(P);
            v->init = parse_tensor_values(P, v->type);
        }
        (*nout)++;
        if (accept(P, close))
            return;
        char ctx[80];
        snprintf(ctx, sizeof ctx, "or '%c' after %s '%s'", close, what, v->name);
        expect(P, ',', ctx);
    }
}

/* outputs = [domain.]Op [<attrs>] (inputs) */
static void parse_node(parser *P, onnx_node *n)
{
    size_t cap = 0;
    n->pos = P->tok.pos;
    for (;;) {
        n->outputs = grow(P, n->outputs, (size_t)n->noutputs, &cap, sizeof *n->outputs);
        n->outputs[n->noutputs++] = expect_ident(P, "an output name at the start of a node");
        if (!accept(P, ','))
            break;
    }
    if (P->tok.kind != T_PUNCT || P->tok.punct != '=') {
        char got[64];
        describe(&P->tok, got, sizeof got);
        fail_at(P, P->tok.pos, "expected '=' after the node's outputs, found %s", got);
    }
    next(P);
    n->op_pos = P->tok.pos;
    const char *qual = expect_ident(P, "an operator name after '='");
    const char *dot = strrchr(qual, '.');
    if (dot) {
        n->domain = strndup_a(P, qual, (size_t)(dot - qual));
        n->op = dot + 1;
    } else {
        n->domain = "";
        n->op = qual;
    }
    if (accept(P, ':')) /* an overload name */
        expect_ident(P, "an overload name after ':'");
    if (accept(P, '<'))
        parse_attrs(P, n);
    if (!is_punct(P, '(')) {
        char got[64];
        describe(&P->tok, got, sizeof got);
        fail_at(P, P->tok.pos, "expected '(' and the inputs of %s, found %s", n->op, got);
    }
    next(P);
    cap = 0;
    if (accept(P, ')'))
        return;
    for (;;) {
        n->inputs = grow(P, n->inputs, (size_t)n->ninputs, &cap, sizeof *n->inputs);
        if (P->tok.kind == T_IDENT)
            n->inputs[n->ninputs++] = expect_ident(P, "an input name");
        else if (is_punct(P, ',') || is_punct(P, ')'))
            n->inputs[n->ninputs++] = ""; /* an omitted optional input */
        else {
            char got[64];
            describe(&P->tok, got, sizeof got);
            fail_at(P, P->tok.pos, "expected an input name of %s, found %s", n->op, got);
        }
        if (accept(P, ')'))
            return;
        expect(P, ',', "or ')' after an input name");
    }
}

static void parse_header(parser *P, onnx_model *m)
{
    if (accept(P, '>'))
        return;
    for (;;) {
        onnx_pos kpos = P->tok.pos;
        const char *key = expect_ident(P, "a model property such as ir_version or opset_import");
        expect(P, ':', "after the model property name");
        if (!strcmp(key, "opset_import")) {
            expect(P, '[', "to start the opset_import list");
            while (!accept(P, ']')) {
                if (P->tok.kind != T_STRING) {
                    char got[64];
                    describe(&P->tok, got, sizeof got);
                    fail_at(P, P->tok.pos, "expected a domain string such as \"\" in opset_import, found %s", got);
                }
                bool default_domain = P->tok.len == 0 || (P->tok.len == 7 && !memcmp(P->tok.start, "ai.onnx", 7));
                next(P);
                expect(P, ':', "between the domain and its version");
                if (P->tok.kind != T_INT)
                    fail_at(P, P->tok.pos, "expected the opset version (an integer)");
                if (default_domain)
                    m->opset = P->tok.i;
                next(P);
                if (!is_punct(P, ']'))
                    expect(P, ',', "or ']' in opset_import");
            }
        } else {
            onnx_attr ignored = {0};
            parse_attr_value(P, &ignored);
            if (!strcmp(key, "ir_version")) {
                if (ignored.kind != ONNX_ATTR_INT)
                    fail_at(P, kpos, "ir_version must be an integer");
                m->ir_version = ignored.i;
            }
        }
        if (accept(P, '>'))
            return;
        expect(P, ',', "or '>' after the model property");
    }
}

int onnx_parse(const char *text, size_t len, onnx_model *out, char *err, size_t cap)
{
    memset(out, 0, sizeof *out);
    /* Errors longjmp back here; the parser state is on the heap so that it
     * is well defined after the jump. */
    parser *P = calloc(1, sizeof *P);
    if (!P) {
        snprintf(err, cap, "out of memory");
        return -2;
    }
    *P = (parser){.p = text, .end = text + len, .line = 1, .line_start = text, .err = err, .cap = cap};
    if (setjmp(P->fail)) {
        onnx_model tmp = {.arena = P->arena};
        int code = P->fail_code;
        onnx_model_free(&tmp);
        free(P);
        memset(out, 0, sizeof *out);
        return code;
    }
    onnx_model *m = alloc(P, sizeof *m);
    m->ir_version = -1;
    m->opset = -1;
    next(P);
    if (accept(P, '<'))
        parse_header(P, m);
    if (P->tok.kind == T_EOF)
        fail_at(P, P->tok.pos, "expected a graph: name (inputs) => (outputs) { nodes }");
    m->name = expect_ident(P, "the graph's name");
    expect(P, '(', "to start the input list");
    parse_values(P, ')', true, "input", &m->inputs, &m->ninputs);
    if (P->tok.kind != T_ARROW) {
        char got[64];
        describe(&P->tok, got, sizeof got);
        fail_at(P, P->tok.pos, "expected '=>' after the input list, found %s", got);
    }
    next(P);
    expect(P, '(', "to start the output list");
    parse_values(P, ')', false, "output", &m->outputs, &m->noutputs);
    if (accept(P, '<'))
        parse_values(P, '>', true, "value", &m->extras, &m->nextras);
    expect(P, '{', "to start the graph's nodes");
    size_t ncap = 0;
    while (!accept(P, '}')) {
        if (P->tok.kind == T_EOF)
            fail_at(P, P->tok.pos, "expected '}' to end the graph's nodes, found end of file");
        m->nodes = grow(P, m->nodes, (size_t)m->nnodes, &ncap, sizeof *m->nodes);
        parse_node(P, &m->nodes[m->nnodes++]);
    }
    if (P->tok.kind != T_EOF) {
        char got[64];
        describe(&P->tok, got, sizeof got);
        fail_at(P, P->tok.pos, "expected end of file after the graph, found %s (functions are not supported)",
                got);
    }
    *out = *m;
    out->arena = P->arena;
    free(P);
    return 0;
}

void onnx_model_free(onnx_model *m)
{
    if (!m)
        return;
    onnx_arena *a = m->arena;
    while (a) {
        onnx_arena *nx = a->next;
        free(a);
        a = nx;
    }
    m->arena = NULL;
}

const onnx_attr *onnx_node_attr(const onnx_node *n, const char *name)
{
    for (int i = 0; i < n->nattrs; i++)
        if (!strcmp(n->attrs[i].name, name))
            return &n->attrs[i];
    return NULL;
}
