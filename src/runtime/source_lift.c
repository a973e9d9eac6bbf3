/* Lifting size-dependent literals out of generated sources (see
 * source_lift.h): a small lexer for the OpenCL C that codegen writes, the
 * analysis of where a literal may become a parameter, the table of
 * skeletons with their generic programs, and the quick match, which finds
 * a source's group by comparing its text with the group's first source
 * instead of lexing it. */
#include "source_lift.h"
#include "program_merge.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"
#include "util/clock.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/strbuf.h"
#include "util/text.h"

/* ---- Lexing ------------------------------------------------------------------ */

/* ASCII classes of a byte, by table (the <ctype.h> calls, one a byte, took
 * a fifth of the lexing; they also follow the locale, which generated
 * OpenCL C must not). */
enum { CH_SPACE = 1, CH_ALPHA = 2, CH_DIGIT = 4 }; /* CH_ALPHA: a letter or '_' */
static const uint8_t char_class[256] = {
    ['\t'] = CH_SPACE, ['\n'] = CH_SPACE, ['\v'] = CH_SPACE, ['\f'] = CH_SPACE, ['\r'] = CH_SPACE, [' '] = CH_SPACE,
    ['0'] = CH_DIGIT, ['1'] = CH_DIGIT, ['2'] = CH_DIGIT, ['3'] = CH_DIGIT, ['4'] = CH_DIGIT,
    ['5'] = CH_DIGIT, ['6'] = CH_DIGIT, ['7'] = CH_DIGIT, ['8'] = CH_DIGIT, ['9'] = CH_DIGIT,
    ['_'] = CH_ALPHA,
#define CH_LETTER(c) [c] = CH_ALPHA, [c - 'a' + 'A'] = CH_ALPHA
    CH_LETTER('a'), CH_LETTER('b'), CH_LETTER('c'), CH_LETTER('d'), CH_LETTER('e'), CH_LETTER('f'), CH_LETTER('g'),
    CH_LETTER('h'), CH_LETTER('i'), CH_LETTER('j'), CH_LETTER('k'), CH_LETTER('l'), CH_LETTER('m'), CH_LETTER('n'),
    CH_LETTER('o'), CH_LETTER('p'), CH_LETTER('q'), CH_LETTER('r'), CH_LETTER('s'), CH_LETTER('t'), CH_LETTER('u'),
    CH_LETTER('v'), CH_LETTER('w'), CH_LETTER('x'), CH_LETTER('y'), CH_LETTER('z'),
#undef CH_LETTER
};
#define CHAR_IS(c, cls) ((char_class[(unsigned char)(c)] & (cls)) != 0)

enum tok_kind { TOK_IDENT, TOK_NUMBER, TOK_PUNCT, TOK_STRING };

typedef struct tok {
    uint32_t off, len;
    uint8_t kind;
    bool dead;   /* in a conditional block the preprocessor skips */
    int32_t dir; /* the preprocessor directive it belongs to, -1: none */
} tok;

typedef struct directive {
    uint32_t first, end; /* its tokens, '#' first */
    bool define;
    uint32_t body; /* a define: its replacement's first token */
} directive;

/* The literal types a parameter can take; LIT_FIXED: any other literal. */
enum lit_type { LIT_FIXED, LIT_INT, LIT_UINT, LIT_LONG, LIT_ULONG, LIT_FLOAT };

static const struct {
    char tag;
    const char *cl;
    uint32_t size;
} lit_types[] = {
    [LIT_FIXED] = {'?', NULL, 0},     [LIT_INT] = {'i', "int", 4},     [LIT_UINT] = {'u', "uint", 4},
    [LIT_LONG] = {'l', "long", 8},    [LIT_ULONG] = {'L', "ulong", 8}, [LIT_FLOAT] = {'f', "float", 4},
};

typedef struct lexed {
    const char *src;
    tok *toks;
    size_t ntoks, cap;
    directive *dirs;
    size_t ndirs, dcap;
    bool failed;
} lexed;

/* Room for one more item in *items (n used of *cap, each size bytes);
 * false (and L failed) when out of memory. */
static bool room(lexed *L, void **items, size_t n, size_t *cap, size_t size, size_t first)
{
    if (n < *cap)
        return true;
    size_t grown = *cap ? 2 * *cap : first;
    void *p = clf__realloc(*items, grown * size);
    if (!p) {
        L->failed = true;
        return false;
    }
    *items = p;
    *cap = grown;
    return true;
}

static void push_tok(lexed *L, uint32_t off, uint32_t len, uint8_t kind, int32_t dir)
{
    if (!room(L, (void **)&L->toks, L->ntoks, &L->cap, sizeof *L->toks, 1024))
        return;
    L->toks[L->ntoks++] = (tok){off, len, kind, false, dir};
}

static bool tok_is(const lexed *L, size_t i, const char *s)
{
    const tok *t = &L->toks[i];
    return strlen(s) == t->len && memcmp(L->src + t->off, s, t->len) == 0;
}

/* Whether name (token t) is defined by a live define before token t. */
static bool defined_before(const lexed *L, size_t t, const bool *live_define)
{
    const tok *u = &L->toks[t];
    bool defined = false;
    for (size_t d = 0; d < L->ndirs && L->dirs[d].first < t; d++) {
        const directive *D = &L->dirs[d];
        if (D->end < D->first + 3 || L->toks[D->first + 2].len != u->len ||
            memcmp(L->src + L->toks[D->first + 2].off, L->src + u->off, u->len) != 0)
            continue;
        if (live_define[d])
            defined = true;
        else if (!L->toks[D->first].dead && tok_is(L, D->first + 1, "undef"))
            defined = false;
    }
    return defined;
}

/* Marks the tokens of conditional blocks the preprocessor skips: #ifdef and
 * #ifndef of names defined or not before them (the templates' examples
 * under "#ifndef CLF_KERNEL_NAME"). Other conditions count as live, both
 * ways. */
static void mark_dead(lexed *L)
{
    struct frame {
        bool parent_dead, known, cond;
    } stack[32];
    int depth = 0;
    bool dead = false;
    bool *live_define = clf__calloc(L->ndirs ? L->ndirs : 1, sizeof *live_define);
    if (!live_define) {
        L->failed = true;
        return;
    }
    size_t d = 0;
    for (size_t i = 0; i < L->ntoks; i++) {
        if (d < L->ndirs && L->dirs[d].first == i) {
            const directive *D = &L->dirs[d];
            bool has_word = D->end > D->first + 1;
            if (has_word && (tok_is(L, i + 1, "ifdef") || tok_is(L, i + 1, "ifndef")) && D->end > D->first + 2 &&
                depth < 32) {
                bool def = defined_before(L, i + 2, live_define);
                bool cond = tok_is(L, i + 1, "ifdef") ? def : !def;
                stack[depth++] = (struct frame){dead, true, cond};
                L->toks[i].dead = dead;
                dead = dead || !cond;
            } else if (has_word && tok_is(L, i + 1, "if") && depth < 32) {
                stack[depth++] = (struct frame){dead, false, false};
            } else if (has_word && depth > 0 && (tok_is(L, i + 1, "else") || tok_is(L, i + 1, "elif"))) {
                struct frame *f = &stack[depth - 1];
                dead = f->parent_dead || (f->known && f->cond);
                f->known = f->known && f->cond; /* after a taken branch, the rest is dead */
            } else if (has_word && depth > 0 && tok_is(L, i + 1, "endif")) {
                dead = stack[--depth].parent_dead;
            } else if (!dead && D->define) {
                live_define[d] = true;
            }
            for (uint32_t t = D->first; t < D->end; t++)
                L->toks[t].dead = L->toks[t].dead || (dead && !live_define[d]);
            i = D->end ? D->end - 1 : i;
            d++;
            continue;
        }
        L->toks[i].dead = dead;
    }
    clf__free(live_define);
}

/* Whether a number starts at s (n bytes left): a digit, or '.' and one. */
static bool number_starts(const char *s, size_t n)
{
    return n > 0 && (CHAR_IS(s[0], CH_DIGIT) || (s[0] == '.' && n > 1 && CHAR_IS(s[1], CH_DIGIT)));
}

/* The end of the number starting at src[i] (of n bytes): a preprocessing
 * number, letters, digits and '.', with a sign after an exponent's e or p. */
static size_t number_end(const char *src, size_t i, size_t n)
{
    const bool hex = src[i] == '0' && i + 1 < n && (src[i + 1] == 'x' || src[i + 1] == 'X');
    while (i < n) {
        char d = src[i];
        if (CHAR_IS(d, CH_ALPHA | CH_DIGIT) || d == '.') {
            i++;
        } else if ((d == '+' || d == '-') &&
                   (src[i - 1] == 'p' || src[i - 1] == 'P' || (!hex && (src[i - 1] == 'e' || src[i - 1] == 'E')))) {
            i++;
        } else {
            break;
        }
    }
    return i;
}

static void lex(const char *src, lexed *L)
{
    memset(L, 0, sizeof *L);
    L->src = src;
    size_t i = 0, n = strlen(src);
    bool line_start = true;
    int32_t dir = -1;
    while (i < n && !L->failed) {
        char c = src[i];
        if (c == '\n') {
            if (dir >= 0)
                L->dirs[dir].end = (uint32_t)L->ntoks;
            dir = -1;
            line_start = true;
            i++;
            continue;
        }
        if (c == '\\' && i + 1 < n && src[i + 1] == '\n') { /* a continued line */
            i += 2;
            continue;
        }
        if (CHAR_IS(c, CH_SPACE)) {
            i++;
            continue;
        }
        if (c == '/' && i + 1 < n && src[i + 1] == '*') {
            const char *end = strstr(src + i + 2, "*/");
            i = end ? (size_t)(end - src) + 2 : n;
            continue;
        }
        if (c == '/' && i + 1 < n && src[i + 1] == '/') {
            while (i < n && src[i] != '\n')
                i++;
            continue;
        }
        if (c == '#' && line_start) {
            if (!room(L, (void **)&L->dirs, L->ndirs, &L->dcap, sizeof *L->dirs, 64))
                break;
            dir = (int32_t)L->ndirs++;
            L->dirs[dir] = (directive){(uint32_t)L->ntoks, (uint32_t)L->ntoks, false, 0};
        }
        line_start = false;
        size_t start = i;
        uint8_t kind;
        if (CHAR_IS(c, CH_ALPHA)) {
            while (i < n && CHAR_IS(src[i], CH_ALPHA | CH_DIGIT))
                i++;
            kind = TOK_IDENT;
        } else if (number_starts(src + i, n - i)) {
            i = number_end(src, i, n);
            kind = TOK_NUMBER;
        } else if (c == '"' || c == '\'') {
            i++;
            while (i < n && src[i] != c && src[i] != '\n')
                i += src[i] == '\\' ? 2 : 1;
            i = i < n ? i + 1 : n;
            kind = TOK_STRING;
        } else {
            i++;
            kind = TOK_PUNCT;
        }
        push_tok(L, (uint32_t)start, (uint32_t)(i - start), kind, dir);
    }
    if (dir >= 0 && !L->failed)
        L->dirs[dir].end = (uint32_t)L->ntoks;
    /* Defines: the replacement starts after the name, and after the
     * parameters of a function-like macro ('(' right after the name). */
    for (size_t d = 0; d < L->ndirs && !L->failed; d++) {
        directive *D = &L->dirs[d];
        if (D->end < D->first + 3 || !tok_is(L, D->first + 1, "define") || L->toks[D->first + 2].kind != TOK_IDENT)
            continue;
        D->define = true;
        uint32_t b = D->first + 3;
        const tok *name = &L->toks[D->first + 2];
        if (b < D->end && tok_is(L, b, "(") && L->toks[b].off == name->off + name->len) {
            while (b < D->end && !tok_is(L, b, ")"))
                b++;
            b++;
        }
        D->body = b;
    }
    mark_dead(L);
}

static void lexed_free(lexed *L)
{
    clf__free(L->toks);
    clf__free(L->dirs);
}

/* The type a literal has in OpenCL C, LIT_FIXED where a parameter would not
 * do (doubles, hexadecimal and octal integers, anything unusual). */
static enum lit_type lit_type_of(const char *s, size_t len)
{
    char text[64];
    if (len == 0 || len >= sizeof text)
        return LIT_FIXED;
    memcpy(text, s, len);
    text[len] = '\0';
    bool hex = len > 1 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
    bool floating = strchr(text, '.') || (hex ? strpbrk(text, "pP") != NULL : strpbrk(text, "eE") != NULL);
    if (floating)
        return (text[len - 1] == 'f' || text[len - 1] == 'F') ? LIT_FLOAT : LIT_FIXED;
    if (hex || (text[0] == '0' && len > 1 && CHAR_IS(text[1], CH_DIGIT)))
        return LIT_FIXED;
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    char suffix[8] = {0};
    size_t ns = strlen(end);
    if (ns >= sizeof suffix)
        return LIT_FIXED;
    for (size_t k = 0; k < ns; k++)
        suffix[k] = (char)tolower((unsigned char)end[k]);
    if (!suffix[0])
        return v <= 0x7fffffffull ? LIT_INT : v <= 0x7fffffffffffffffull ? LIT_LONG : LIT_FIXED;
    if (!strcmp(suffix, "u"))
        return v <= 0xffffffffull ? LIT_UINT : LIT_ULONG;
    if (!strcmp(suffix, "l") || !strcmp(suffix, "ll"))
        return v <= 0x7fffffffffffffffull ? LIT_LONG : LIT_FIXED;
    if (!strcmp(suffix, "ul") || !strcmp(suffix, "lu") || !strcmp(suffix, "ull") || !strcmp(suffix, "llu"))
        return LIT_ULONG;
    return LIT_FIXED;
}

/* ---- Where a literal may become a parameter -------------------------------- */

/* Token contexts: in a function body that takes CLF_PARAMS where a value
 * may stand (CTX_BODY), in a define's replacement (CTX_MACRO + directive),
 * anywhere else (CTX_ELSE). */
enum { CTX_ELSE = -2, CTX_BODY = -1 };

typedef struct parsed {
    lexed L;
    int32_t *ctx;            /* per token */
    uint32_t *lits;          /* the liftable literals' tokens, in order */
    uint8_t *types;          /* their types */
    size_t nlits;
    int32_t params_dir, args_dir; /* the defines of CLF_PARAMS and CLF_ARGS, -1: none */
    char *skeleton; /* the live tokens, a space before each, a newline where the directive changes,
                     * each liftable literal as \x01 and its type's tag */
} parsed;

/* The live defines by name: an open-addressed table of the first define
 * of each name (slots hold a directive's index, -1 when empty). */
typedef struct name_index {
    int32_t *slots;
    size_t mask;
} name_index;

static const tok *define_name(const lexed *L, int32_t d) { return &L->toks[L->dirs[d].first + 2]; }

static size_t slot_of(const lexed *L, const tok *name, size_t mask)
{
    return (size_t)clf__hash_bytes(CLF__HASH_SEED, L->src + name->off, name->len) & mask;
}

static bool index_defines(const lexed *L, const int32_t *defs, size_t ndefs, name_index *ix)
{
    size_t cap = 16;
    while (cap < 2 * ndefs + 2)
        cap *= 2;
    ix->mask = cap - 1;
    ix->slots = clf__malloc(cap * sizeof *ix->slots);
    if (!ix->slots)
        return false;
    for (size_t i = 0; i < cap; i++)
        ix->slots[i] = -1;
    for (size_t k = 0; k < ndefs; k++) {
        const tok *name = define_name(L, defs[k]);
        size_t at = slot_of(L, name, ix->mask);
        for (;; at = (at + 1) & ix->mask) {
            int32_t d = ix->slots[at];
            if (d < 0) {
                ix->slots[at] = defs[k];
                break;
            }
            const tok *other = define_name(L, d);
            if (other->len == name->len && !memcmp(L->src + other->off, L->src + name->off, name->len))
                break; /* defined before: the first define answers */
        }
    }
    return true;
}

/* The first live define of the name token t stands for, -1: none. */
static int32_t macro_of(const lexed *L, size_t t, const name_index *ix)
{
    const tok *u = &L->toks[t];
    for (size_t at = slot_of(L, u, ix->mask);; at = (at + 1) & ix->mask) {
        int32_t d = ix->slots[at];
        if (d < 0)
            return -1;
        const tok *name = define_name(L, d);
        if (name->len == u->len && !memcmp(L->src + name->off, L->src + u->off, u->len))
            return d;
    }
}

/* The fixed point of: a macro used where a literal cannot be lifted
 * (CTX_ELSE) cannot carry a parameter, nor can a macro used in the
 * replacement of one that cannot (ok[m] false for those). The uses are
 * grouped by the define whose replacement holds them, and each macro ruled
 * out rules out the macros of its replacement once (a worklist: one pass
 * over the tokens and one over the uses, where rescanning every token until
 * nothing changed took a pass per level of macros in macros and a tenth of
 * the lexing). False when out of memory. */
static bool rule_out_macros(const lexed *L, const int32_t *ctx, const int32_t *use_of, bool *ok)
{
    const size_t nd = L->ndirs ? L->ndirs : 1;
    uint32_t *start = clf__calloc(nd + 1, sizeof *start), *used = NULL;
    int32_t *stack = clf__calloc(nd, sizeof *stack);
    size_t nuses = 0, top = 0;
    for (size_t i = 0; start && i < L->ntoks; i++)
        if (use_of[i] >= 0 && ctx[i] >= 0) {
            start[ctx[i] + 1]++;
            nuses++;
        }
    used = clf__calloc(nuses ? nuses : 1, sizeof *used);
    if (!start || !stack || !used) {
        clf__free(start);
        clf__free(stack);
        clf__free(used);
        return false;
    }
    for (size_t d = 0; d < nd; d++)
        start[d + 1] += start[d];
    /* The uses by define (start[d] moves to its range's end while they are
     * placed: moved back after), and the macros used outside any. */
    for (size_t i = 0; i < L->ntoks; i++) {
        const int32_t m = use_of[i];
        if (m < 0)
            continue;
        if (ctx[i] >= 0)
            used[start[ctx[i]]++] = (uint32_t)m;
        else if (ctx[i] == CTX_ELSE && ok[m]) {
            ok[m] = false;
            stack[top++] = m;
        }
    }
    for (size_t d = nd; d > 0; d--)
        start[d] = start[d - 1];
    start[0] = 0;
    while (top > 0) {
        const int32_t c = stack[--top];
        for (uint32_t u = start[c]; u < start[c + 1]; u++)
            if (ok[used[u]]) {
                ok[used[u]] = false;
                stack[top++] = (int32_t)used[u];
            }
    }
    clf__free(start);
    clf__free(stack);
    clf__free(used);
    return true;
}

static void contexts(parsed *P)
{
    lexed *L = &P->L;
    /* Function bodies. */
    int depth = 0;
    size_t header = 0;
    bool takes_params = false, stmt_local = false, stmt_assigns = false;
    uint64_t decl_brackets = 0; /* a stack of bits: 1 for a '[' of a declaration */
    int nbrackets = 0;
    for (size_t i = 0; i < L->ntoks; i++) {
        P->ctx[i] = CTX_ELSE;
        if (L->toks[i].dir >= 0 || L->toks[i].dead)
            continue;
        if (depth == 0) {
            if (tok_is(L, i, "{")) {
                takes_params = false;
                for (size_t h = header; h < i; h++)
                    takes_params |= L->toks[h].dir < 0 && !L->toks[h].dead && tok_is(L, h, "CLF_PARAMS");
                depth = 1;
                stmt_local = stmt_assigns = false;
                nbrackets = 0;
                decl_brackets = 0;
            } else if (tok_is(L, i, ";") || tok_is(L, i, "}")) {
                header = i + 1;
            }
            continue;
        }
        if (tok_is(L, i, "{") || tok_is(L, i, "}") || tok_is(L, i, ";")) {
            depth += tok_is(L, i, "{") ? 1 : tok_is(L, i, "}") ? -1 : 0;
            if (depth == 0)
                header = i + 1;
            stmt_local = stmt_assigns = false;
            nbrackets = 0;
            decl_brackets = 0;
            continue;
        }
        if (tok_is(L, i, "__local") || tok_is(L, i, "local") || tok_is(L, i, "__attribute__"))
            stmt_local = true;
        if (tok_is(L, i, "="))
            stmt_assigns = true;
        if (tok_is(L, i, "[")) {
            if (nbrackets < 64 && !stmt_assigns)
                decl_brackets |= 1ull << nbrackets;
            nbrackets++;
        } else if (tok_is(L, i, "]") && nbrackets > 0) {
            nbrackets--;
            if (nbrackets < 64)
                decl_brackets &= ~(1ull << nbrackets);
        }
        bool in_decl = nbrackets > 0 && (decl_brackets & ((nbrackets >= 64 ? ~0ull : (1ull << nbrackets) - 1))) != 0;
        bool after_case = i > 0 && tok_is(L, i - 1, "case");
        if (takes_params && !stmt_local && !in_decl && !after_case)
            P->ctx[i] = CTX_BODY;
    }
    /* Replacements of defines. */
    int32_t *defs = clf__calloc(L->ndirs ? L->ndirs : 1, sizeof *defs);
    bool *ok = clf__calloc(L->ndirs ? L->ndirs : 1, sizeof *ok);
    if (!defs || !ok) {
        L->failed = true;
        goto out;
    }
    size_t ndefs = 0;
    P->params_dir = P->args_dir = -1;
    for (size_t d = 0; d < L->ndirs; d++) {
        const directive *D = &L->dirs[d];
        if (!D->define || L->toks[D->first].dead)
            continue;
        defs[ndefs++] = (int32_t)d;
        ok[d] = true;
        for (uint32_t t = D->body; t < D->end; t++)
            P->ctx[t] = (int32_t)d;
        if (tok_is(L, D->first + 2, "CLF_PARAMS"))
            P->params_dir = (int32_t)d;
        if (tok_is(L, D->first + 2, "CLF_ARGS"))
            P->args_dir = (int32_t)d;
    }
    /* A macro may carry a parameter where every use of it may (fixed point
     * over macros used in macros). The uses of each macro, once. */
    int32_t *use_of = clf__calloc(L->ntoks ? L->ntoks : 1, sizeof *use_of);
    if (!use_of) {
        L->failed = true;
        goto out;
    }
    /* Every define of a name answers for all its uses (a name defined
     * again, under #if, is looked at as one): name_of maps a define to the
     * first define of its name. */
    int32_t *name_of = clf__calloc(L->ndirs ? L->ndirs : 1, sizeof *name_of);
    name_index ix = {NULL, 0};
    if (!name_of || !index_defines(L, defs, ndefs, &ix)) {
        clf__free(name_of);
        clf__free(ix.slots);
        clf__free(use_of);
        L->failed = true;
        goto out;
    }
    for (size_t k = 0; k < ndefs; k++)
        name_of[defs[k]] = macro_of(L, L->dirs[defs[k]].first + 2, &ix);
    for (size_t i = 0; i < L->ntoks; i++) {
        use_of[i] = -1;
        if (L->toks[i].kind != TOK_IDENT || L->toks[i].dead)
            continue;
        int32_t d = L->toks[i].dir;
        if (d >= 0 && L->dirs[d].define && i == L->dirs[d].first + 2)
            continue; /* the name being defined */
        if (d >= 0 && L->dirs[d].end > L->dirs[d].first + 1 &&
            (tok_is(L, L->dirs[d].first + 1, "undef") || tok_is(L, L->dirs[d].first + 1, "ifdef") ||
             tok_is(L, L->dirs[d].first + 1, "ifndef")))
            continue; /* named, not expanded */
        use_of[i] = macro_of(L, i, &ix);
    }
    clf__free(ix.slots);
    /* Contexts inside a define's replacement count as its name's. */
    for (size_t i = 0; i < L->ntoks; i++)
        if (P->ctx[i] >= 0)
            P->ctx[i] = name_of[P->ctx[i]];
    clf__free(name_of);
    if (!rule_out_macros(L, P->ctx, use_of, ok)) {
        clf__free(use_of);
        L->failed = true;
        goto out;
    }
    clf__free(use_of);
    P->lits = clf__calloc(L->ntoks ? L->ntoks : 1, sizeof *P->lits);
    P->types = clf__calloc(L->ntoks ? L->ntoks : 1, 1);
    if (!P->lits || !P->types) {
        L->failed = true;
        goto out;
    }
    for (size_t i = 0; i < L->ntoks; i++) {
        const tok *t = &L->toks[i];
        int32_t c = P->ctx[i];
        if (t->kind != TOK_NUMBER || t->dead || P->params_dir < 0 || !(c == CTX_BODY || (c >= 0 && ok[c])))
            continue;
        enum lit_type ty = lit_type_of(L->src + t->off, t->len);
        if (ty == LIT_FIXED)
            continue;
        P->types[P->nlits] = (uint8_t)ty;
        P->lits[P->nlits++] = (uint32_t)i;
    }
out:
    clf__free(defs);
    clf__free(ok);
}

/* Lexes source and finds its liftable literals and its skeleton. */
static bool parse(const char *source, parsed *P)
{
    memset(P, 0, sizeof *P);
    lex(source, &P->L);
    P->ctx = clf__calloc(P->L.ntoks ? P->L.ntoks : 1, sizeof *P->ctx);
    if (P->L.failed || !P->ctx)
        return false;
    contexts(P);
    if (P->L.failed)
        return false;
    /* Written in place: at most two characters before each token, and a
     * literal's placeholder (3) is no longer than the space and literal it
     * stands for. */
    size_t cap = 1;
    for (size_t i = 0; i < P->L.ntoks; i++)
        cap += 2 + P->L.toks[i].len;
    char *out = P->skeleton = clf__malloc(cap);
    if (!out)
        return false;
    size_t next = 0;
    for (size_t i = 0; i < P->L.ntoks; i++) {
        const tok *t = &P->L.toks[i];
        if (t->dead)
            continue;
        if (i > 0 && P->L.toks[i - 1].dir != t->dir)
            *out++ = '\n';
        *out++ = ' ';
        if (next < P->nlits && P->lits[next] == i) {
            *out++ = '\x01';
            *out++ = lit_types[P->types[next]].tag;
            next++;
        } else {
            memcpy(out, source + t->off, t->len);
            out += t->len;
        }
    }
    *out = '\0';
    return true;
}

static void parsed_free(parsed *P)
{
    lexed_free(&P->L);
    clf__free(P->ctx);
    clf__free(P->lits);
    clf__free(P->types);
    clf__free(P->skeleton);
}

static bool same_lit(const parsed *a, const parsed *b, size_t j)
{
    const tok *x = &a->L.toks[a->lits[j]], *y = &b->L.toks[b->lits[j]];
    return x->len == y->len && memcmp(a->L.src + x->off, b->L.src + y->off, x->len) == 0;
}

/* ---- The table --------------------------------------------------------------- */

typedef struct group {
    uint64_t hash;
    char *skeleton;
    char *base;     /* the first source seen */
    size_t base_len;
    uint64_t head;  /* a hash of its first line (head_hash) */
    parsed first;   /* its parse (first.L.src is base) */
    bool *varies;   /* per liftable literal: seen with two values */
    bool *lifted;   /* what the generic program was built with */
    cl_program generic;
    /* Where a program holds several groups' forms (built as one, program_merge.c):
     * this group's place in it, whose kernel functions are clf__merged_name(entry,
     * slot); NO_SLOT: a program of its own. */
    size_t generic_slot;
    bool as_is;          /* worth building as it is (clf__lift_note) */
    bool base_built;     /* the first source was built as it is */
    bool refused;        /* the generic program did not build */
    cl_program concrete; /* that build */
    size_t concrete_slot;
    struct group *next;
} group;

/* A source instantiated before, exactly: the program and arguments it got
 * (a decode step at a new length generates most kernels byte for byte as
 * the step before did; their lexing is then skipped). The program is
 * retained: it stays right for this source whatever the group builds later
 * (an as-is build, or a generic one with these arguments). */
typedef struct memo {
    uint64_t hash;
    size_t len;
    const char *source; /* a reference to the text (util/text.h) */
    cl_program prog;
    size_t slot; /* the source's place in prog (NO_SLOT: its own program) */
    clf__lift_arg *args;
    uint32_t nargs;
} memo;

#define MEMOS 256
#define NO_SLOT SIZE_MAX

/* A kernel shared by the table's executables (clf__lift_kernel). The
 * list is pruned of kernels only it still holds once it has doubled. */
typedef struct shared_kernel {
    cl_program prog; /* identifies it; retained by the kernel */
    char *name;
    cl_kernel kernel;
    struct shared_kernel *next;
} shared_kernel;

struct clf__lift_table {
    pthread_mutex_t lock;
    pthread_mutex_t run_lock; /* clf__lift_run_lock */
    cl_event last_run;        /* clf__lift_last_run */
    group *groups;
    shared_kernel *kernels;
    size_t nkernels, prune_at; /* the list's length; when it is pruned next */
    memo memos[MEMOS]; /* a ring: next is the one replaced next */
    size_t next_memo;
    void (*prober)(void *arg); /* clf__lift_set_prober */
    void *prober_arg;
    bool probed; /* the prober ran since it was set */
    size_t lexed; /* sources clf__lift_note and clf__lift_program lexed (clf__lift_sources_lexed) */
};

static void group_free(group *g)
{
    if (g->generic)
        clReleaseProgram(g->generic);
    if (g->concrete)
        clReleaseProgram(g->concrete);
    parsed_free(&g->first);
    clf__free(g->skeleton);
    clf__free(g->base);
    clf__free(g->varies);
    clf__free(g->lifted);
    clf__free(g);
}


static void shared_kernel_free(shared_kernel *k)
{
    clReleaseKernel(k->kernel);
    clf__free(k->name);
    clf__free(k);
}

static void memo_clear(memo *m)
{
    if (m->prog)
        clReleaseProgram(m->prog);
    clf__text_release(m->source);
    clf__free(m->args);
    memset(m, 0, sizeof *m);
}

/* The memo of the text source itself (the kernel memo hands one text to
 * every kernel it serves), or NULL. Called with the lock held. */
static const memo *memo_same(const clf__lift_table *t, const char *source)
{
    for (size_t i = 0; i < MEMOS; i++)
        if (t->memos[i].source == source)
            return &t->memos[i];
    return NULL;
}

/* The memo of exactly source's characters (hash h, len bytes), or NULL.
 * Called with the lock held. */
static const memo *memo_find(const clf__lift_table *t, uint64_t h, size_t len, const char *source)
{
    for (size_t i = 0; i < MEMOS; i++) {
        const memo *m = &t->memos[i];
        if (m->source && m->hash == h && m->len == len && !memcmp(m->source, source, len))
            return m;
    }
    return NULL;
}

/* Keeps what source got (best effort: out of memory keeps nothing). Called
 * with the lock held. */
static void memo_keep(clf__lift_table *t, uint64_t h, size_t len, const char *source, cl_program prog,
                      size_t slot, const clf__lift_arg *args, uint32_t nargs)
{
    memo *m = &t->memos[t->next_memo];
    memo_clear(m);
    m->args = clf__malloc((nargs ? nargs : 1) * sizeof *args);
    if (!m->args)
        return;
    m->source = clf__text_ref(source);
    if (nargs)
        memcpy(m->args, args, nargs * sizeof *args);
    m->hash = h;
    m->len = len;
    m->nargs = nargs;
    clRetainProgram(prog);
    m->prog = prog;
    m->slot = slot;
    t->next_memo = (t->next_memo + 1) % MEMOS;
}

clf__lift_table *clf__lift_table_new(void)
{
    clf__lift_table *t = clf__calloc(1, sizeof *t);
    if (t && pthread_mutex_init(&t->lock, NULL) != 0) {
        clf__free(t);
        return NULL;
    }
    if (t && pthread_mutex_init(&t->run_lock, NULL) != 0) {
        pthread_mutex_destroy(&t->lock);
        clf__free(t);
        return NULL;
    }
    return t;
}

void clf__lift_table_free(clf__lift_table **tp)
{
    if (!tp || !*tp)
        return;
    clf__lift_table *t = *tp;
    for (group *g = t->groups, *next; g; g = next) {
        next = g->next;
        group_free(g);
    }
    for (size_t i = 0; i < MEMOS; i++)
        memo_clear(&t->memos[i]);
    for (shared_kernel *k = t->kernels, *next; k; k = next) {
        next = k->next;
        shared_kernel_free(k);
    }
    pthread_mutex_destroy(&t->run_lock);
    if (t->last_run)
        clReleaseEvent(t->last_run);
    pthread_mutex_destroy(&t->lock);
    clf__free(t);
    *tp = NULL;
}

/* A hash of a source's first line: codegen's "name: generated by" line,
 * the same for the sources of one kernel at every size. */
static uint64_t head_hash(const char *source)
{
    const char *nl = strchr(source, '\n');
    return clf__hash_bytes(CLF__HASH_SEED, source, nl ? (size_t)(nl - source) : strlen(source));
}

/* The group of P's skeleton, made when there is none; NULL when out of
 * memory. Called with the lock held. */
static group *group_of(clf__lift_table *t, const char *source, parsed *P)
{
    const char *sk = P->skeleton;
    const uint64_t h = clf__hash_words(CLF__HASH_SEED, sk, strlen(sk));
    group *g = t->groups;
    while (g && !(g->hash == h && !strcmp(g->skeleton, sk)))
        g = g->next;
    if (g)
        return g;
    if (!(g = clf__calloc(1, sizeof *g)))
        return NULL;
    g->hash = h;
    g->skeleton = clf__strdup(sk);
    g->base = clf__strdup(source);
    g->base_len = strlen(source);
    g->head = head_hash(source);
    g->generic_slot = g->concrete_slot = NO_SLOT;
    g->varies = clf__calloc(P->nlits ? P->nlits : 1, sizeof *g->varies);
    g->lifted = clf__calloc(P->nlits ? P->nlits : 1, sizeof *g->lifted);
    if (!g->skeleton || !g->base || !g->varies || !g->lifted || !parse(g->base, &g->first)) {
        group_free(g);
        return NULL;
    }
    g->next = t->groups;
    t->groups = g;
    return g;
}

/* Whether any literal of the group has been seen with two values. */
static bool any_varies(const group *g)
{
    for (size_t j = 0; j < g->first.nlits; j++)
        if (g->varies[j])
            return true;
    return false;
}

/* Notes which literals of P differ from the group's first source; whether
 * any literal of the group varies. */
static bool note_differences(group *g, const parsed *P)
{
    for (size_t j = 0; j < P->nlits; j++)
        if (!g->varies[j] && !same_lit(&g->first, P, j))
            g->varies[j] = true;
    return any_varies(g);
}

static group *literal_variant_of(clf__lift_table *t, const char *source, size_t len, bool covered, size_t **at);

clf_status clf__lift_note(clf__lift_table *t, const char *source, bool as_is)
{
    /* A source of a group seen before, but for some literals: those vary
     * (as note_differences would find after lexing it). */
    size_t *at;
    pthread_mutex_lock(&t->lock);
    group *seen = literal_variant_of(t, source, strlen(source), false, &at);
    if (seen) {
        for (size_t j = 0; j < seen->first.nlits; j++)
            seen->varies[j] |= at[j] != SIZE_MAX;
        seen->as_is |= as_is;
    }
    pthread_mutex_unlock(&t->lock);
    clf__free(at);
    if (seen)
        return CLF_OK;
    parsed P;
    bool ok = parse(source, &P);
    if (ok) {
        pthread_mutex_lock(&t->lock);
        t->lexed++;
        group *g = group_of(t, source, &P);
        if (g) {
            note_differences(g, &P);
            g->as_is |= as_is;
        }
        ok = g != NULL;
        pthread_mutex_unlock(&t->lock);
    }
    parsed_free(&P);
    return ok ? CLF_OK : CLF_ERR_OUT_OF_MEMORY;
}

/* An edit of a source: len bytes at off replaced by text. */
typedef struct edit {
    size_t off, len;
    char text[24];
    const char *long_text; /* instead of text, when set */
} edit;

static int edit_order(const void *a, const void *b)
{
    const edit *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* The end of a define's replacement. */
static size_t define_end(const lexed *L, int32_t d)
{
    const directive *D = &L->dirs[d];
    const tok *last = &L->toks[D->end - 1];
    return last->off + last->len;
}

/* The group's first source with the literals that vary as parameters,
 * declared at the end of CLF_PARAMS and passed at the end of CLF_ARGS. */
static char *generic_source(const group *g)
{
    const parsed *F = &g->first;
    const lexed *L = &F->L;
    if (F->params_dir < 0)
        return NULL;
    edit *edits = clf__calloc(F->nlits + 2, sizeof *edits);
    clf__strbuf decls = {0}, names = {0}, out = {0};
    if (!edits)
        return NULL;
    size_t n = 0;
    unsigned k = 0;
    for (size_t j = 0; j < F->nlits; j++) {
        if (!g->varies[j])
            continue;
        clf__sb_printf(&decls, ", const %s clf_l%u", lit_types[F->types[j]].cl, k);
        clf__sb_printf(&names, ", clf_l%u", k);
        edit *E = &edits[n++];
        E->off = L->toks[F->lits[j]].off;
        E->len = L->toks[F->lits[j]].len;
        snprintf(E->text, sizeof E->text, "clf_l%u", k++);
    }
    edits[n++] = (edit){define_end(L, F->params_dir), 0, "", clf__sb_str(&decls)};
    if (F->args_dir >= 0)
        edits[n++] = (edit){define_end(L, F->args_dir), 0, "", clf__sb_str(&names)};
    qsort(edits, n, sizeof *edits, edit_order);
    size_t at = 0;
    for (size_t e = 0; e < n; e++) {
        clf__sb_putn(&out, L->src + at, edits[e].off - at);
        clf__sb_puts(&out, edits[e].long_text ? edits[e].long_text : edits[e].text);
        at = edits[e].off + edits[e].len;
    }
    clf__sb_puts(&out, L->src + at);
    clf__free(edits);
    char *text = clf__sb_ok(&decls) && clf__sb_ok(&names) ? clf__sb_take(&out) : NULL;
    clf__sb_free(&decls);
    clf__sb_free(&names);
    clf__sb_free(&out);
    return text;
}

void clf__lift_set_prober(clf__lift_table *t, void (*prober)(void *arg), void *arg)
{
    pthread_mutex_lock(&t->lock);
    t->prober = prober;
    t->prober_arg = arg;
    t->probed = false;
    pthread_mutex_unlock(&t->lock);
}

size_t clf__lift_sources_lexed(clf__lift_table *t)
{
    pthread_mutex_lock(&t->lock);
    const size_t n = t->lexed;
    pthread_mutex_unlock(&t->lock);
    return n;
}

char *clf__lift_generic_source(clf__lift_table *t, const char *source)
{
    parsed P;
    char *out = NULL;
    if (parse(source, &P)) {
        pthread_mutex_lock(&t->lock);
        group *g = group_of(t, source, &P);
        if (g && note_differences(g, &P))
            out = generic_source(g);
        pthread_mutex_unlock(&t->lock);
    }
    parsed_free(&P);
    return out;
}

/* The value of a literal of type type, len bytes at s, as a kernel
 * argument. */
static clf__lift_arg arg_from(enum lit_type type, const char *s, size_t len)
{
    char text[64];
    size_t n = len < sizeof text - 1 ? len : sizeof text - 1;
    memcpy(text, s, n);
    text[n] = '\0';
    clf__lift_arg a = {lit_types[type].size, {0}};
    if (type == LIT_FLOAT) {
        float f = strtof(text, NULL);
        memcpy(a.bytes, &f, sizeof f);
    } else if (a.size == 4) {
        uint32_t v = (uint32_t)strtoull(text, NULL, 10);
        memcpy(a.bytes, &v, sizeof v);
    } else {
        uint64_t v = strtoull(text, NULL, 10);
        memcpy(a.bytes, &v, sizeof v);
    }
    return a;
}

/* The value of P's liftable literal j as a kernel argument. */
static clf__lift_arg arg_of(const parsed *P, size_t j)
{
    const tok *t = &P->L.toks[P->lits[j]];
    return arg_from(P->types[j], P->L.src + t->off, t->len);
}

/* How many literals the group's generic program takes. */
static uint32_t lifted_count(const group *g)
{
    uint32_t n = 0;
    for (size_t j = 0; j < g->first.nlits; j++)
        n += g->lifted[j];
    return n;
}

/* The values of the group's lifted literals as kernel arguments, in order
 * (heap, *n of them; NULL when out of memory), from a source of the group:
 * literal j as P has it (a lexed source), else at source + at[j] (a quick
 * match; at[j] SIZE_MAX: as the group's first source has it). */
static clf__lift_arg *lifted_args(const group *g, const parsed *P, const char *source, size_t len, const size_t *at,
                                  uint32_t *n)
{
    const uint32_t count = lifted_count(g);
    clf__lift_arg *args = clf__calloc(count ? count : 1, sizeof *args);
    *n = 0;
    for (size_t j = 0; args && j < g->first.nlits; j++) {
        if (!g->lifted[j])
            continue;
        if (P)
            args[(*n)++] = arg_of(P, j);
        else if (at[j] == SIZE_MAX)
            args[(*n)++] = arg_of(&g->first, j);
        else
            args[(*n)++] = arg_from(g->first.types[j], source + at[j], number_end(source, at[j], len) - at[j]);
    }
    return args;
}

/* Whether the group's generic program lifts every literal that varies. */
static bool generic_covers(const group *g)
{
    bool covered = g->generic != NULL;
    for (size_t j = 0; j < g->first.nlits && covered; j++)
        covered = !g->varies[j] || g->lifted[j];
    return covered;
}

/* Gives group g prog (a reference the group takes) as its generic
 * program, built with the literals that vary now as parameters, at slot
 * (NO_SLOT: a program of its own). */
static void keep_generic(group *g, cl_program prog, size_t slot)
{
    if (g->generic)
        clReleaseProgram(g->generic);
    g->generic = prog;
    g->generic_slot = slot;
    memcpy(g->lifted, g->varies, g->first.nlits * sizeof *g->lifted);
}

/* Builds the group's generic program unless the one it has lifts every
 * literal that varies. Called with the lock held. */
static clf_status ensure_generic(clf_context *ctx, group *g, cl_int *build_err)
{
    const size_t nlits = g->first.nlits;
    if (generic_covers(g))
        return CLF_OK;
    char *generic = generic_source(g);
    if (!generic)
        return clf__ctx_fail(ctx, CLF_ERR_OUT_OF_MEMORY, "clf_compile: out of memory");
    cl_program built;
    clf_status st = clf__program_get(ctx, generic, "", &built, build_err);
    clf__free(generic);
    if (st != CLF_OK)
        return st;
    keep_generic(g, built, NO_SLOT);
    clf__log(CLF__LOG_CACHE, "a generic program with %u of %zu literals as parameters", (unsigned)lifted_count(g),
             nlits);
    return CLF_OK;
}

/* Whether a source of group g would build a program now: a generic one
 * where literals vary and the generic program has not lifted them all,
 * else the source as it is where that was never built. */
static bool needs_build(const group *g)
{
    return any_varies(g) ? !generic_covers(g) : !g->concrete && !g->base_built;
}

/* Whether the prebuild gets a program for group g: a generic one that
 * lifts every literal that varies, or its first source as it is. */
static bool prebuilds(const group *g)
{
    return any_varies(g) ? !g->refused && !generic_covers(g) : g->as_is && !g->concrete;
}

/* A program a group needs: its generic source, or its first source as it is. */
typedef struct form_build {
    group *g;
    bool generic;
    char *text; /* heap */
} form_build;

/* The text of the program group g needs now (heap), *generic saying which:
 * its generic source where literals vary and its generic program does not
 * take them all, its first source where nothing varies and it has no build
 * of that; NULL when it needs none (or out of memory: *oom). */
static char *form_text(const group *g, bool *generic, bool *oom)
{
    char *text = NULL;
    *generic = any_varies(g);
    if (*generic && !g->refused && !generic_covers(g))
        text = generic_source(g);
    else if (!*generic && !g->concrete)
        text = clf__strdup(g->base);
    else
        return NULL;
    *oom |= text == NULL;
    return text;
}

static void forms_free(form_build *f, size_t n)
{
    for (size_t i = 0; i < n; i++)
        clf__free(f[i].text);
    clf__free(f);
}

/* Builds the n forms as one program (program_merge.c: PoCL's builds cost
 * most per program, not per kernel) and hands each group its place in it;
 * *done false where they do not build so: the caller's builds then come one
 * at a time, and a failure names its kernel. Logged as what. Called with
 * the lock held. */
static clf_status build_as_one(clf_context *ctx, form_build *f, size_t n, const char *what, bool *done)
{
    *done = false;
    const char **texts = clf__malloc(n * sizeof *texts);
    if (!texts)
        return clf__ctx_fail(ctx, CLF_ERR_OUT_OF_MEMORY, "clf_compile: out of memory");
    for (size_t i = 0; i < n; i++)
        texts[i] = f[i].text;
    char *merged = clf__merge_sources(texts, n);
    clf__free(texts);
    if (!merged)
        return clf__ctx_fail(ctx, CLF_ERR_OUT_OF_MEMORY, "clf_compile: out of memory");
    /* Said before the build, which takes PoCL seconds. */
    const bool logged = clf__log_enabled(CLF__LOG_CACHE);
    clf__program_counts before = {0}, after;
    if (logged) {
        clf__log(CLF__LOG_CACHE, "symbolic sizes: %s: %zu programs as one: loading or building it", what, n);
        clf__program_cache_counts(ctx, &before);
    }
    const double t0 = clf__now_ms();
    cl_program prog;
    clf_status st = clf__program_get(ctx, merged, "", &prog, NULL);
    clf__free(merged);
    if (st == CLF_ERR_BUILD) {
        clf__log(CLF__LOG_PERF, "symbolic sizes: %s: %zu programs as one did not build; building them apart: %s",
                 what, n, clf_context_last_error(ctx));
        clf__ctx_clear_error(ctx);
        return CLF_OK;
    }
    if (st != CLF_OK)
        return st;
    if (logged) {
        clf__program_cache_counts(ctx, &after);
        clf__log(CLF__LOG_CACHE, "symbolic sizes: %s: %zu programs as one: %s in %.1f ms", what, n,
                 after.source_builds != before.source_builds ? "built" : "cached", clf__now_ms() - t0);
    }
    for (size_t i = 0; i < n; i++) {
        group *g = f[i].g;
        clRetainProgram(prog);
        if (f[i].generic) {
            keep_generic(g, prog, i);
        } else {
            if (g->concrete)
                clReleaseProgram(g->concrete);
            g->concrete = prog;
            g->concrete_slot = i;
            g->base_built = true;
        }
    }
    clReleaseProgram(prog);
    *done = true;
    return CLF_OK;
}

/* The prebuild's programs as one (where the context builds so); *done as
 * build_as_one. Called with the lock held. */
static clf_status prebuild_as_one(clf_context *ctx, clf__lift_table *t, size_t todo, bool *done)
{
    *done = false;
    if (!ctx->one_program || todo < 2)
        return CLF_OK;
    form_build *f = clf__calloc(todo, sizeof *f);
    bool oom = f == NULL;
    size_t n = 0;
    for (group *g = t->groups; g && !oom; g = g->next)
        if (prebuilds(g) && n < todo) {
            f[n].g = g;
            f[n].text = form_text(g, &f[n].generic, &oom);
            n += f[n].text != NULL;
        }
    clf_status st = oom ? clf__ctx_fail(ctx, CLF_ERR_OUT_OF_MEMORY, "clf_compile: out of memory")
                        : build_as_one(ctx, f, n, "the kernels' shared forms", done);
    if (f)
        forms_free(f, n);
    return st;
}

clf_status clf__lift_prebuild(clf_context *ctx, clf__lift_table *t)
{
    pthread_mutex_lock(&t->lock);
    /* Progress, where logged: a program takes PoCL 0.1-0.8 s, a model a
     * few dozen (as clf_compile's "kernel i of n" lines). */
    const bool logged = clf__log_enabled(CLF__LOG_CACHE);
    size_t todo = 0, done = 0;
    for (const group *g = t->groups; g; g = g->next)
        todo += prebuilds(g);
    if (todo && logged)
        clf__log(CLF__LOG_CACHE, "symbolic sizes: %zu program%s for the kernels' shared forms", todo,
                 todo == 1 ? "" : "s");
    bool as_one;
    clf_status st = prebuild_as_one(ctx, t, todo, &as_one);
    for (group *g = t->groups; g && st == CLF_OK && !as_one; g = g->next) {
        const bool counted = logged && prebuilds(g);
        clf__program_counts before = {0}, after;
        const double t0 = counted ? clf__now_ms() : 0.0;
        if (counted)
            clf__program_cache_counts(ctx, &before);
        if (any_varies(g) && !g->refused) {
            st = ensure_generic(ctx, g, NULL);
            if (st == CLF_ERR_BUILD) { /* as clf__lift_program: built as they come */
                g->refused = true;
                clf__ctx_clear_error(ctx);
                st = CLF_OK;
            }
        } else if (g->as_is && !g->concrete) {
            st = clf__program_get(ctx, g->base, "", &g->concrete, NULL);
            g->concrete_slot = NO_SLOT;
        }
        g->base_built |= g->concrete != NULL;
        if (counted && st == CLF_OK) {
            clf__program_cache_counts(ctx, &after);
            clf__log(CLF__LOG_CACHE, "symbolic sizes: program %zu of %zu: %s in %.1f ms", ++done, todo,
                     g->refused                                     ? "refused (built as its kernels come)"
                     : after.source_builds != before.source_builds ? "built"
                                                                    : "cached",
                     clf__now_ms() - t0);
        }
    }
    pthread_mutex_unlock(&t->lock);
    return st;
}

/* ---- The quick match ---------------------------------------------------------- */

/* The length of the longest common prefix of a (na bytes) and b (nb),
 * compared eight bytes at a time. */
static size_t common_prefix(const char *a, size_t na, const char *b, size_t nb)
{
    const size_t n = na < nb ? na : nb;
    size_t i = 0;
    for (uint64_t x, y; i + 8 <= n; i += 8) {
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        if (x != y)
            break;
    }
    while (i < n && a[i] == b[i])
        i++;
    return i;
}

/* Where source differs from the group's first source (b of len bytes):
 * only at liftable literals of the first source, each written in source
 * as a literal of the same type. Then true, with at[j] the offset in
 * source of literal j when its text differs (else SIZE_MAX). The texts are
 * compared (common_prefix); at a difference, the first source must have
 * a liftable literal there (or ending there, when source's is longer),
 * whose text in source starts where the first source's does, since all
 * before it is the same text: lexed alike. */
static bool differs_in_literals(const group *g, const char *b, size_t len, size_t *at)
{
    const parsed *F = &g->first;
    const char *a = g->base;
    size_t i = 0, j = 0, next = 0;
    for (;;) {
        const size_t same = common_prefix(a + i, g->base_len - i, b + j, len - j);
        i += same;
        j += same;
        if (i == g->base_len && j == len)
            return true;
        while (next < F->nlits && F->L.toks[F->lits[next]].off + F->L.toks[F->lits[next]].len < i)
            next++;
        if (next == F->nlits)
            return false;
        const tok *t = &F->L.toks[F->lits[next]];
        if (i < t->off)
            return false; /* not in a literal */
        const size_t k = j - (i - t->off), end = number_starts(b + k, len - k) ? number_end(b, k, len) : k;
        if (lit_type_of(b + k, end - k) != F->types[next])
            return false;
        if (end - k != t->len || memcmp(b + k, a + t->off, t->len) != 0)
            at[next] = k;
        i = t->off + t->len;
        j = end;
        next++;
    }
}

/* The group whose first source source is but for some liftable literals
 * written otherwise (differs_in_literals: the same skeleton), with *at
 * (heap, a slot per literal) marking those; NULL when none does or memory
 * ran out. Only one group can: skeletons differ. covered: only a group
 * whose generic program takes every literal that varies. Called with the
 * lock held. */
static group *literal_variant_of(clf__lift_table *t, const char *source, size_t len, bool covered, size_t **at)
{
    const uint64_t head = head_hash(source);
    *at = NULL;
    for (group *g = t->groups; g; g = g->next) {
        if (g->head != head || (covered && (g->refused || !generic_covers(g))))
            continue;
        const size_t n = g->first.nlits;
        if (!(*at = clf__malloc((n ? n : 1) * sizeof **at)))
            return NULL;
        for (size_t j = 0; j < n; j++)
            (*at)[j] = SIZE_MAX;
        if (differs_in_literals(g, source, len, *at))
            return g;
        clf__free(*at);
        *at = NULL;
    }
    return NULL;
}

/* The generic program of a group that source matches without lexing it
 * (a source that differs from the group's first source only in literals
 * the group's generic program takes as parameters: most kernels of a step
 * at a new length), retained, with its arguments, and kept as the memo
 * of source (hash h); NULL when no group does. Called with the lock held. */
static cl_program quick_match(clf__lift_table *t, const char *source, size_t len, uint64_t h, size_t *slot,
                              clf__lift_arg **args, uint32_t *nargs)
{
    size_t *at;
    group *g = literal_variant_of(t, source, len, true, &at);
    if (!g)
        return NULL;
    bool ok = true;
    for (size_t j = 0; j < g->first.nlits && ok; j++)
        ok = at[j] == SIZE_MAX || g->lifted[j];
    *args = ok ? lifted_args(g, NULL, source, len, at, nargs) : NULL;
    clf__free(at);
    if (!*args)
        return NULL;
    clRetainProgram(g->generic);
    *slot = g->generic_slot;
    memo_keep(t, h, len, source, g->generic, *slot, *args, *nargs);
    return g->generic;
}

/* A build ahead: the prober (once per setting, clf__lift_set_prober) shows
 * the forms at another size first, so that the build is of the generic
 * ones. Whether it ran. Called with the lock held, which it releases while
 * the prober runs. */
static bool run_prober(clf__lift_table *t)
{
    if (!t->prober || t->probed)
        return false;
    void (*prober)(void *) = t->prober;
    void *arg = t->prober_arg;
    t->probed = true;
    pthread_mutex_unlock(&t->lock);
    prober(arg);
    pthread_mutex_lock(&t->lock);
    return true;
}

clf_status clf__lift_program(clf_context *ctx, clf__lift_table *t, const char *source, cl_program *prog,
                             size_t *slot, clf__lift_arg **args, uint32_t *nargs, cl_int *build_err)
{
    *prog = NULL;
    *slot = NO_SLOT;
    *args = NULL;
    *nargs = 0;
    /* The memo's key: the text itself (a kernel the kernel memo served),
     * else its length and hash (made with the text), with the whole text
     * compared. */
    const size_t len = clf__text_len(source);
    const uint64_t h = clf__text_hash(source);
    pthread_mutex_lock(&t->lock);
    const memo *seen = memo_same(t, source);
    if (!seen)
        seen = memo_find(t, h, len, source);
    if (seen) {
        *args = clf__malloc((seen->nargs ? seen->nargs : 1) * sizeof **args);
        if (*args) {
            if (seen->nargs)
                memcpy(*args, seen->args, seen->nargs * sizeof **args);
            *nargs = seen->nargs;
            clRetainProgram(seen->prog);
            *prog = seen->prog;
            *slot = seen->slot;
        }
    }
    if (!*prog)
        *prog = quick_match(t, source, len, h, slot, args, nargs);
    pthread_mutex_unlock(&t->lock);
    if (*prog)
        return CLF_OK;
    clf__free(*args);
    *args = NULL;
    *nargs = 0;
    parsed P;
    clf_status st = CLF_OK;
    if (!parse(source, &P)) {
        parsed_free(&P);
        return clf__ctx_fail(ctx, CLF_ERR_OUT_OF_MEMORY, "clf_compile: out of memory");
    }
    pthread_mutex_lock(&t->lock);
    t->lexed++;
    group *g = group_of(t, source, &P);
    if (!g) {
        st = clf__ctx_fail(ctx, CLF_ERR_OUT_OF_MEMORY, "clf_compile: out of memory");
        goto out;
    }
    bool varies = note_differences(g, &P);
    if (needs_build(g) && run_prober(t))
        varies = note_differences(g, &P);
    if (!varies) { /* nothing varies: the source itself */
        if (g->concrete) {
            clRetainProgram(g->concrete);
            *prog = g->concrete;
            *slot = g->concrete_slot;
        } else {
            st = clf__program_get(ctx, source, "", prog, build_err);
        }
        g->base_built = st == CLF_OK;
        goto out;
    }
    st = g->refused ? CLF_ERR_BUILD : ensure_generic(ctx, g, build_err);
    if (st == CLF_ERR_BUILD) {
        /* A driver that refuses the generic form (a literal it wanted
         * constant): the form's sources are built as they are from now on. */
        if (!g->refused)
            clf__log(CLF__LOG_PERF, "a generic program did not build, building sources as they are: %s",
                     clf_context_last_error(ctx));
        g->refused = true;
        clf__ctx_clear_error(ctx);
        st = clf__program_get(ctx, source, "", prog, build_err);
        goto out;
    }
    if (st != CLF_OK)
        goto out;
    *args = lifted_args(g, &P, source, len, NULL, nargs);
    if (!*args) {
        st = clf__ctx_fail(ctx, CLF_ERR_OUT_OF_MEMORY, "clf_compile: out of memory");
        goto out;
    }
    clRetainProgram(g->generic);
    *prog = g->generic;
    *slot = g->generic_slot;
out:
    if (st == CLF_OK && *prog)
        memo_keep(t, h, len, source, *prog, *slot, *args, *nargs);
    pthread_mutex_unlock(&t->lock);
    parsed_free(&P);
    return st;
}

/* Whether clf__lift_program would serve source (len bytes, hash h) with no
 * build: a memo of it, or the quick match (which keeps one, found then by
 * the text's address). Called with the lock held. */
static bool served(clf__lift_table *t, const char *source, size_t len, uint64_t h)
{
    if (memo_same(t, source) || memo_find(t, h, len, source))
        return true;
    size_t slot;
    clf__lift_arg *args;
    uint32_t nargs;
    cl_program prog = quick_match(t, source, len, h, &slot, &args, &nargs);
    if (!prog)
        return false;
    clReleaseProgram(prog);
    clf__free(args);
    return true;
}

clf_status clf__lift_prepare(clf_context *ctx, clf__lift_table *t, const char *const *sources, size_t n)
{
    if (!ctx->one_program || n < 2)
        return CLF_OK;
    parsed *P = clf__calloc(n, sizeof *P);
    group **of = clf__calloc(n, sizeof *of);
    form_build *f = clf__calloc(n, sizeof *f);
    size_t m = 0;
    bool oom = !P || !of || !f, done;
    clf_status st = CLF_OK;
    /* The sources a build would serve, lexed (outside the lock, as
     * clf__lift_program does) and noted in their groups. */
    for (size_t i = 0; i < n && !oom; i++) {
        bool again = false; /* one text for the kernels of one source (the layers of a model) */
        for (size_t j = 0; j < i && !again; j++)
            again = sources[j] == sources[i];
        if (again)
            continue;
        pthread_mutex_lock(&t->lock);
        const bool skip = served(t, sources[i], clf__text_len(sources[i]), clf__text_hash(sources[i]));
        pthread_mutex_unlock(&t->lock);
        if (skip)
            continue;
        oom = !parse(sources[i], &P[i]);
        pthread_mutex_lock(&t->lock);
        t->lexed += !oom;
        if (!oom && (of[i] = group_of(t, sources[i], &P[i])) != NULL)
            note_differences(of[i], &P[i]);
        oom |= !of[i];
        pthread_mutex_unlock(&t->lock);
    }
    if (oom) {
        st = clf__ctx_fail(ctx, CLF_ERR_OUT_OF_MEMORY, "clf_compile: out of memory");
        goto out;
    }
    pthread_mutex_lock(&t->lock);
    /* The prober first, as clf__lift_program runs it, so that the build is
     * of the generic forms. */
    bool wanted = false;
    for (size_t i = 0; i < n; i++)
        if (of[i])
            wanted |= needs_build(of[i]);
    if (wanted && run_prober(t))
        for (size_t i = 0; i < n; i++)
            if (of[i])
                note_differences(of[i], &P[i]);
    /* A program per group that needs one (needs_build: not for a source
     * built as it is already, which clf__lift_program finds in the
     * context's cache), once. */
    for (size_t i = 0; i < n && !oom; i++) {
        group *g = of[i];
        bool again = !g || !needs_build(g);
        for (size_t j = 0; j < m && !again; j++)
            again = f[j].g == g;
        if (again)
            continue;
        f[m].g = g;
        f[m].text = form_text(g, &f[m].generic, &oom);
        m += f[m].text != NULL;
    }
    if (oom)
        st = clf__ctx_fail(ctx, CLF_ERR_OUT_OF_MEMORY, "clf_compile: out of memory");
    else if (m >= 2)
        st = build_as_one(ctx, f, m, "a new size's kernels", &done);
    pthread_mutex_unlock(&t->lock);
out:
    for (size_t i = 0; P && i < n; i++)
        parsed_free(&P[i]); /* (zeroed where not lexed) */
    if (f)
        forms_free(f, m);
    clf__free(P);
    clf__free(of);
    return st;
}

pthread_mutex_t *clf__lift_run_lock(clf__lift_table *t) { return &t->run_lock; }

cl_event *clf__lift_last_run(clf__lift_table *t) { return &t->last_run; }

clf_status clf__lift_kernel(clf__lift_table *t, cl_program prog, const char *name, cl_kernel *out, cl_int *err)
{
    *out = NULL;
    *err = CL_SUCCESS;
    pthread_mutex_lock(&t->lock);
    shared_kernel *k = t->kernels;
    while (k && !(k->prog == prog && !strcmp(k->name, name)))
        k = k->next;
    if (!k && t->nkernels >= t->prune_at) {
        /* Kernels no executable holds any more (their specialisations
         * dropped) go, with the programs only they kept alive. */
        for (shared_kernel **at = &t->kernels; *at;) {
            cl_uint refs = 0;
            if (clGetKernelInfo((*at)->kernel, CL_KERNEL_REFERENCE_COUNT, sizeof refs, &refs, NULL) == CL_SUCCESS &&
                refs == 1) {
                shared_kernel *dead = *at;
                *at = dead->next;
                shared_kernel_free(dead);
                t->nkernels--;
            } else {
                at = &(*at)->next;
            }
        }
        t->prune_at = t->nkernels * 2 > 256 ? t->nkernels * 2 : 256;
    }
    if (!k) {
        k = clf__calloc(1, sizeof *k);
        char *copy = clf__strdup(name);
        cl_kernel made = k && copy ? clCreateKernel(prog, name, err) : NULL;
        if (!made) {
            clf__free(k);
            clf__free(copy);
            pthread_mutex_unlock(&t->lock);
            return *err != CL_SUCCESS ? CLF_ERR_OPENCL : CLF_ERR_OUT_OF_MEMORY;
        }
        *k = (shared_kernel){prog, copy, made, t->kernels};
        t->kernels = k;
        t->nkernels++;
    }
    clRetainKernel(k->kernel);
    *out = k->kernel;
    pthread_mutex_unlock(&t->lock);
    return CLF_OK;
}
