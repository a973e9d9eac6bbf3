/* Lexer and recursive-descent parser for the ONNX textual syntax; see
 * onnx_ast.h for the grammar it accepts. Errors stop at the first problem
 * and say where it is and what was expected there. Tensor literals are
 * stored in their element type's own bytes, as the binary reader stores
 * them. */
#include "onnx_ast.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"

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
    clf__onnx_pos pos;
} token;

typedef struct parser {
    const char *p, *end;
    int line;
    const char *line_start;
    token tok; /* the current token */
    clf__onnx_arena *arena; /* &store */
    clf__onnx_arena store;
    char *err;
    size_t cap;
    jmp_buf fail;
    clf_status fail_code;
} parser;

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4), noreturn))
#endif
static void fail_at(parser *P, clf__onnx_pos pos, const char *fmt, ...)
{
    int n = snprintf(P->err, P->cap, "%d:%d: ", pos.line, pos.col);
    if (n >= 0 && (size_t)n < P->cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(P->err + n, P->cap - (size_t)n, fmt, ap);
        va_end(ap);
    }
    P->fail_code = CLF_ERR_MODEL;
    longjmp(P->fail, 1);
}

#if defined(__GNUC__)
__attribute__((noreturn))
#endif
static void fail_oom(parser *P)
{
    snprintf(P->err, P->cap, "out of memory");
    P->fail_code = CLF_ERR_OUT_OF_MEMORY;
    longjmp(P->fail, 1);
}

static void *alloc(parser *P, size_t size)
{
    void *r = clf__onnx_alloc(P->arena, size);
    if (!r)
        fail_oom(P);
    return r;
}

static const char *strndup_a(parser *P, const char *s, size_t n)
{
    char *r = clf__onnx_strndup(P->arena, s, n);
    if (!r)
        fail_oom(P);
    return r;
}

/* A growable array in the arena: grows by copying (the old block is left
 * in the arena), which is fine for the sizes models have. */
static void *grow(parser *P, void *v, size_t n, size_t *cap, size_t elem)
{
    if (n < *cap)
        return v;
    size_t nc = *cap ? *cap * 2 : 8;
    if (nc > SIZE_MAX / elem)
        fail_oom(P);
    void *r = alloc(P, nc * elem);
    if (v)
        memcpy(r, v, n * elem);
    *cap = nc;
    return r;
}

static clf__onnx_pos here(const parser *P) { return (clf__onnx_pos){P->line, (int)(P->p - P->line_start) + 1}; }

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

static int elem_of_token(const parser *P)
{
    if (P->tok.kind != T_IDENT)
        return CLF__ONNX_UNDEFINED;
    return clf__onnx_elem_from_name(P->tok.start, P->tok.len);
}

/* type := elem [ '[' dim {, dim} ']' ] */
static clf__onnx_type parse_type(parser *P, const char *what)
{
    clf__onnx_type t = {.pos = P->tok.pos};
    t.elem = elem_of_token(P);
    if (t.elem == CLF__ONNX_UNDEFINED) {
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
        if (t.rank == CLF__ONNX_MAX_RANK)
            fail_at(P, P->tok.pos, "more than %d dimensions", CLF__ONNX_MAX_RANK);
        clf__onnx_dim *d = &t.dims[t.rank++];
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
    clf__onnx_pos pos = P->tok.pos;
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

/* IEEE half and bfloat16 bits of v, rounded to nearest even. */
static uint16_t to_half(double v)
{
    float f = (float)v;
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t mant = x & 0x7fffff;
    int exp = (int)((x >> 23) & 0xff);
    if (exp == 255)
        return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 : 0));
    int e = exp - 127 + 15;
    if (e >= 31)
        return (uint16_t)(sign | 0x7c00);
    uint32_t h, rem, half;
    if (e <= 0) { /* a subnormal half, or zero */
        if (e < -10)
            return sign;
        mant |= 0x800000;
        int shift = 14 - e;
        h = mant >> shift;
        rem = mant & ((1u << shift) - 1);
        half = 1u << (shift - 1);
    } else {
        h = ((uint32_t)e << 10) | (mant >> 13);
        rem = mant & 0x1fff;
        half = 0x1000;
    }
    if (rem > half || (rem == half && (h & 1)))
        h++; /* a carry into the exponent is right, up to infinity */
    return (uint16_t)(sign | h);
}

static uint16_t to_bfloat16(double v)
{
    float f = (float)v;
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if (isnan(f))
        return (uint16_t)((x >> 16) | 0x40);
    return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

/* Stores value k of T (a number already read: v, and iv when is_int) in
 * T's element type, refusing what the type cannot hold. */
static void store_value(parser *P, clf__onnx_tensor *T, void *data, size_t k, double v, bool is_int, int64_t iv,
                        clf__onnx_pos pos)
{
    int elem = T->type.elem;
    char *at = (char *)data + k * clf__onnx_elem_size(elem);
    if (clf__onnx_elem_is_float(elem)) {
        if (elem == CLF__ONNX_FLOAT) {
            float f = (float)v;
            memcpy(at, &f, sizeof f);
        } else if (elem == CLF__ONNX_DOUBLE) {
            memcpy(at, &v, sizeof v);
        } else {
            uint16_t h = elem == CLF__ONNX_FLOAT16 ? to_half(v) : to_bfloat16(v);
            memcpy(at, &h, sizeof h);
        }
        return;
    }
    if (!is_int)
        fail_at(P, pos, "expected an integer in a %s tensor", clf__onnx_elem_name(elem));
    int64_t lo = 0, hi = INT64_MAX;
    switch (elem) {
    case CLF__ONNX_INT8: lo = INT8_MIN; hi = INT8_MAX; break;
    case CLF__ONNX_UINT8: hi = UINT8_MAX; break;
    case CLF__ONNX_INT16: lo = INT16_MIN; hi = INT16_MAX; break;
    case CLF__ONNX_UINT16: hi = UINT16_MAX; break;
    case CLF__ONNX_INT32: lo = INT32_MIN; hi = INT32_MAX; break;
    case CLF__ONNX_UINT32: hi = UINT32_MAX; break;
    case CLF__ONNX_INT64: lo = INT64_MIN; break;
    case CLF__ONNX_BOOL: lo = INT64_MIN; break; /* any non-zero number is true */
    default: break;                             /* uint64: what int64 holds */
    }
    if (iv < lo || iv > hi)
        fail_at(P, pos, "%lld does not fit in %s", (long long)iv, clf__onnx_elem_name(elem));
    switch (clf__onnx_elem_size(elem)) {
    case 1: { uint8_t x = elem == CLF__ONNX_BOOL ? iv != 0 : (uint8_t)iv; memcpy(at, &x, 1); break; }
    case 2: { uint16_t x = (uint16_t)iv; memcpy(at, &x, 2); break; }
    case 4: { uint32_t x = (uint32_t)iv; memcpy(at, &x, 4); break; }
    default: memcpy(at, &iv, 8); break;
    }
}

/* '{' values '}' for a tensor of type t; the count must match the shape. */
static clf__onnx_tensor *parse_tensor_values(parser *P, clf__onnx_type t)
{
    clf__onnx_tensor *T = alloc(P, sizeof *T);
    T->type = t;
    if (!t.has_shape)
        t.has_shape = T->type.has_shape = true; /* "float {1.5}" is a scalar */
    size_t want = 1;
    for (int d = 0; d < t.rank; d++) {
        if (t.dims[d].param)
            fail_at(P, t.pos, "a tensor literal needs numeric dimensions");
        /* Every value takes a byte of text at least, so a shape that holds
         * more values than the text has bytes is refused before anything
         * is allocated for it. */
        if (t.dims[d].value && want > (size_t)(P->end - P->p) / (size_t)t.dims[d].value)
            fail_at(P, t.pos, "the tensor's shape holds more values than the rest of the text could list");
        want *= (size_t)t.dims[d].value;
    }
    size_t esize = clf__onnx_elem_size(t.elem);
    if (!esize)
        fail_at(P, t.pos, "%s tensors are not supported", clf__onnx_elem_name(t.elem));
    clf__onnx_pos open = P->tok.pos;
    expect(P, '{', "to start the tensor's values");
    size_t n = 0;
    void *data = want ? alloc(P, want * esize) : NULL;
    if (!is_punct(P, '}')) {
        for (;;) {
            clf__onnx_pos pos = P->tok.pos;
            bool is_int;
            int64_t iv = 0;
            double v = number_value(P, &is_int, &iv);
            if (n == want)
                fail_at(P, pos, "more values than the %zu of a %s tensor of this shape", want,
                        clf__onnx_elem_name(t.elem));
            store_value(P, T, data, n, v, is_int, iv, pos);
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
    T->data = data;
    return T;
}

/* ---- Attributes ------------------------------------------------------------ */

static void parse_attr_value(parser *P, clf__onnx_attr *a)
{
    if (P->tok.kind == T_INT) {
        a->kind = CLF__ONNX_ATTR_INT;
        a->i = P->tok.i;
        a->f = P->tok.f;
        next(P);
    } else if (P->tok.kind == T_FLOAT || tok_is(P, "inf") || tok_is(P, "nan")) {
        bool is_int;
        int64_t iv;
        a->kind = CLF__ONNX_ATTR_FLOAT;
        a->f = number_value(P, &is_int, &iv);
    } else if (P->tok.kind == T_STRING) {
        a->kind = CLF__ONNX_ATTR_STRING;
        a->s = strndup_a(P, P->tok.start, P->tok.len);
        next(P);
    } else if (accept(P, '@')) {
        a->kind = CLF__ONNX_ATTR_REF;
        a->s = expect_ident(P, "an attribute name after '@'");
    } else if (accept(P, '[')) {
        size_t cap = 0;
        a->kind = CLF__ONNX_ATTR_INTS;
        bool any_float = false, any_string = false;
        double *f = NULL;
        int64_t *iv = NULL;
        const char **s = NULL;
        size_t capf = 0, caps = 0;
        if (!is_punct(P, ']')) {
            for (;;) {
                clf__onnx_pos pos = P->tok.pos;
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
        a->kind = any_string ? CLF__ONNX_ATTR_STRINGS : any_float ? CLF__ONNX_ATTR_FLOATS : CLF__ONNX_ATTR_INTS;
        a->ints = iv;
        a->floats = f;
        a->strings = s;
    } else if (elem_of_token(P) != CLF__ONNX_UNDEFINED) {
        clf__onnx_type t = parse_type(P, "the tensor attribute");
        a->kind = CLF__ONNX_ATTR_TENSOR;
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
static void parse_attrs(parser *P, clf__onnx_node *n)
{
    size_t cap = 0;
    if (accept(P, '>'))
        return;
    for (;;) {
        n->attrs = grow(P, n->attrs, (size_t)n->nattrs, &cap, sizeof *n->attrs);
        clf__onnx_attr *a = &n->attrs[n->nattrs];
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
static void parse_values(parser *P, char close, bool inits_ok, const char *what, clf__onnx_value **out, int *nout)
{
    size_t cap = 0;
    if (accept(P, close))
        return;
    for (;;) {
        *out = grow(P, *out, (size_t)*nout, &cap, sizeof **out);
        clf__onnx_value *v = &(*out)[*nout];
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
static void parse_node(parser *P, clf__onnx_node *n)
{
    size_t cap = 0;
    n->name = "";
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

static void parse_header(parser *P, clf__onnx_model *m)
{
    if (accept(P, '>'))
        return;
    for (;;) {
        clf__onnx_pos kpos = P->tok.pos;
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
            clf__onnx_attr ignored = {0};
            parse_attr_value(P, &ignored);
            if (!strcmp(key, "ir_version")) {
                if (ignored.kind != CLF__ONNX_ATTR_INT)
                    fail_at(P, kpos, "ir_version must be an integer");
                m->ir_version = ignored.i;
            }
        }
        if (accept(P, '>'))
            return;
        expect(P, ',', "or '>' after the model property");
    }
}

clf_status clf__onnx_parse_text(const char *text, size_t len, clf__onnx_model *out, char *err, size_t cap)
{
    memset(out, 0, sizeof *out);
    if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3)) { /* a UTF-8 byte order mark, as some editors write */
        text += 3;
        len -= 3;
    }
    /* Errors longjmp back here; the parser state is on the heap so that it
     * is well defined after the jump. */
    parser *P = clf__calloc(1, sizeof *P);
    if (!P) {
        snprintf(err, cap, "out of memory");
        return CLF_ERR_OUT_OF_MEMORY;
    }
    *P = (parser){.p = text, .end = text + len, .line = 1, .line_start = text, .err = err, .cap = cap};
    P->arena = &P->store;
    if (setjmp(P->fail)) {
        clf_status code = P->fail_code;
        clf__onnx_arena_free(&P->store);
        clf__free(P);
        memset(out, 0, sizeof *out);
        return code;
    }
    clf__onnx_model *m = alloc(P, sizeof *m);
    m->ir_version = -1;
    m->opset = -1;
    m->format = CLF_ONNX_FORMAT_TEXT;
    m->producer = "";
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
    out->arena = P->store;
    clf__free(P);
    return CLF_OK;
}
