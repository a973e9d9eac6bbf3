/* Kernel-local names in generated sources. Codegen writes the plan's buffer
 * and node ids into identifiers (parameter b18 and its offset o_18,
 * reduction fields a->s_42 and row->r_42, CLF_GIX_42 for a gather's
 * indices); kernels that compute the
 * same thing on other tensors - the layers of a model - then differ only in
 * those numbers. Renaming them to ordinals within the kernel (b0, a->s_3,
 * CLF_GIX_1) gives such kernels one source: one OpenCL program built, one
 * entry in each cache. No template has an identifier of these forms.
 *
 * The renaming is exact or not done: every identifier of the source that
 * has a generated name's form and names a parameter or an op of the kernel
 * is replaced (comments, strings and numbers are copied as they are), and
 * the source is left as generated when a new name is already an identifier
 * of the source that is not renamed. None of these forms can be a vector
 * component (.s1) or a builtin. The template every writer ends a source
 * with (after its "/\* ---- kernels_templates/" line) is not read, nor
 * the constant texts some sources carry before their own code (the
 * storage floats' helpers, erf.cl, mma_sync.cl): none has such an
 * identifier (clf__cg_generated_name, which a codegen test runs over each).
 * About 40 us for a 21 KB kernel read whole; most kernels are mostly
 * template. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "codegen/codegen_expr.h"
#include "codegen/templates.h"
#include "util/alloc.h"
#include "util/log.h"
#include "util/strbuf.h"
#include "util/text.h"

/* The fields and variables codegen names after a node id, the prefix then
 * the id (codegen_reduction.c, the index algebra's gathers), then the one
 * named after a buffer id besides its parameter b<id>: the offset o_<id> of
 * a buffer in the scratch (codegen_expr.h), renamed with its parameter. */
static const char *const node_prefixes[] = {"s_", "c_", "v_", "i_", "n_", "z_", "r_", "CLF_GIX_", "o_"};
enum { NPREFIX = sizeof node_prefixes / sizeof node_prefixes[0], OFFSET = NPREFIX - 1, PARAM = NPREFIX };

/* An id and its ordinal in the kernel, sorted by id for bsearch. */
typedef struct id_ord {
    uint32_t id, ord;
} id_ord;

static int cmp_id(const void *a, const void *b)
{
    const uint32_t x = ((const id_ord *)a)->id, y = ((const id_ord *)b)->id;
    return x < y ? -1 : x > y;
}

static bool ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

static bool ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9'); }

/* Whether the identifier of len characters at p has the form of a name
 * codegen makes of an id - b then digits (PARAM), or a node prefix then
 * digits (its index) - and if so which, with the number in *v. Other
 * identifiers (nearly all) are neither renamed nor a new name. */
static int generated_shape(const char *p, size_t len, uint32_t *v)
{
    int kind = -1;
    size_t d = 0;
    if (p[len - 1] < '0' || p[len - 1] > '9' || (p[0] != 'b' && p[1] != '_' && p[0] != 'C'))
        return -1; /* the quick test that passes nearly every identifier by */
    if (p[0] == 'b') {
        kind = PARAM;
        d = 1;
    } else {
        for (int f = 0; f < NPREFIX && kind < 0; f++) {
            const size_t pl = strlen(node_prefixes[f]);
            if (len > pl && memcmp(p, node_prefixes[f], pl) == 0) {
                kind = f;
                d = pl;
            }
        }
    }
    if (kind < 0 || d >= len || len - d > 9)
        return -1;
    uint32_t x = 0;
    for (size_t i = d; i < len; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        x = x * 10u + (uint32_t)(p[i] - '0');
    }
    *v = x;
    return kind;
}

/* The end of the comment, string, character or number at p, or p when none
 * starts there. */
static const char *skip_non_ident(const char *p)
{
    if (p[0] == '/' && p[1] == '/') {
        const char *e = strchr(p, '\n');
        return e ? e : p + strlen(p);
    }
    if (p[0] == '/' && p[1] == '*') {
        const char *e = strstr(p + 2, "*/");
        return e ? e + 2 : p + strlen(p);
    }
    if (p[0] == '"' || p[0] == '\'') {
        const char q = p[0];
        const char *e = p + 1;
        while (*e && *e != q)
            e += (e[0] == '\\' && e[1]) ? 2 : 1;
        return *e ? e + 1 : e;
    }
    if ((p[0] >= '0' && p[0] <= '9') || (p[0] == '.' && p[1] >= '0' && p[1] <= '9')) {
        const char *e = p + 1;
        for (;;) {
            if ((*e == '+' || *e == '-') && strchr("eEpP", e[-1]))
                e++;
            else if (ident_char(*e) || *e == '.')
                e++;
            else
                return e;
        }
    }
    return p;
}

/* The next identifier at or after p and before end (its end in *e), or
 * NULL: comments, strings, characters and numbers are passed over. */
static const char *next_ident(const char *p, const char *end, const char **e)
{
    while (p < end && *p) {
        const char c = *p;
        if (ident_start(c)) {
            const char *q = p + 1;
            while (ident_char(*q))
                q++;
            *e = q;
            return p;
        }
        /* Only these can start a comment, string, character or number. */
        const char *q = c == '/' || c == '"' || c == '\'' || c == '.' || (c >= '0' && c <= '9') ? skip_non_ident(p) : p;
        p = q != p ? q : p + 1;
    }
    return NULL;
}

/* The start of the template a generated source ends with: its marker
 * line, the last "/\* ---- kernels_templates/" of the source; the source's
 * end when there is none. */
static const char *template_start(const char *src)
{
    static const char marker[] = "/* ---- kernels_templates/";
    const char *last = NULL;
    for (const char *m = strstr(src, marker); m; m = strstr(m + 1, marker))
        last = m;
    return last ? last : src + strlen(src);
}

const char *clf__cg_generated_name(const char *text)
{
    const char *e, *const end = text + strlen(text);
    uint32_t v;
    for (const char *p = next_ident(text, end, &e); p; p = next_ident(e, end, &e))
        if (generated_shape(p, (size_t)(e - p), &v) >= 0)
            return p;
    return NULL;
}

/* A stretch of a source that is one of the constant texts. */
typedef struct span {
    const char *from, *to;
} span;

/* Where the constant texts lie in src before end (in order, at most
 * three): found by their first line, and only where the whole text is
 * there. */
static size_t constant_spans(const char *src, const char *end, span *out)
{
    const char *const texts[] = {clf__cg_storage_floats(), clf__template_erf, clf__template_mma_sync};
    size_t n = 0;
    for (size_t t = 0; t < sizeof texts / sizeof *texts; t++) {
        const char *nl = strchr(texts[t], '\n');
        const size_t len = strlen(texts[t]), head = nl ? (size_t)(nl - texts[t]) + 1 : len;
        char first[256];
        if (head == 0 || head >= sizeof first)
            continue;
        memcpy(first, texts[t], head);
        first[head] = '\0';
        const char *at = strstr(src, first);
        if (!at || at + len > end || memcmp(at, texts[t], len) != 0)
            continue;
        size_t i = n++;
        for (; i > 0 && out[i - 1].from > at; i--)
            out[i] = out[i - 1];
        out[i] = (span){at, at + len};
    }
    for (size_t i = 1; i < n; i++) /* overlapping: not texts as written; read them */
        if (out[i].from < out[i - 1].to)
            return 0;
    return n;
}

/* ids[i] paired with i, sorted by id; false when an id repeats or memory
 * ran out. */
static id_ord *sorted_ids(const uint32_t *ids, uint32_t n, bool *ok)
{
    id_ord *v = clf__malloc((n ? n : 1) * sizeof *v);
    *ok = v != NULL;
    if (!v)
        return NULL;
    for (uint32_t i = 0; i < n; i++)
        v[i] = (id_ord){ids[i], i};
    qsort(v, n, sizeof *v, cmp_id);
    for (uint32_t i = 0; i + 1 < n; i++)
        if (v[i].id == v[i + 1].id)
            *ok = false;
    return v;
}

bool clf__cg_canonical_names(const uint32_t *params, uint32_t nparams, const uint32_t *nodes, uint32_t nnodes,
                             const char **source)
{
    bool ok_p, ok_n, done = false;
    id_ord *pv = sorted_ids(params, nparams, &ok_p), *nv = sorted_ids(nodes, nnodes, &ok_n);
    clf__strbuf out = {0};
    const char *src = *source, *why = NULL, *copied = src, *at = src;
    const char *const generated_end = template_start(src);
    span spans[3];
    const size_t nspans = constant_spans(src, generated_end, spans);
    size_t why_len = 0;
    if (!ok_p || !ok_n)
        goto end; /* an id listed twice: not a kernel codegen wrote */
    clf__sb_reserve(&out, clf__text_len(src) + 64);
    /* One pass: text is copied in runs up to each identifier renamed; the
     * constant texts are passed over. */
    const char *e, *from = src;
    for (size_t s = 0; s <= nspans && !why; s++) {
        const char *const limit = s < nspans ? spans[s].from : generated_end;
        for (const char *p = next_ident(from, limit, &e); p && !why; p = next_ident(e, limit, &e)) {
            uint32_t v;
            const int kind = generated_shape(p, (size_t)(e - p), &v);
            if (kind < 0)
                continue;
            const bool param = kind == PARAM || kind == OFFSET;
            const id_ord key = {v, 0};
            const id_ord *hit = bsearch(&key, param ? pv : nv, param ? nparams : nnodes, sizeof key, cmp_id);
            if (hit) {
                clf__sb_putn(&out, copied, (size_t)(p - copied));
                clf__sb_puts(&out, kind == PARAM ? "b" : node_prefixes[kind]);
                clf__sb_put_i64(&out, hit->ord);
                copied = e;
            } else if (v < (param ? nparams : nnodes)) {
                why = "a new name is already used"; /* by an identifier not renamed */
                at = p;
                why_len = (size_t)(e - p);
            }
        }
        if (s < nspans)
            from = spans[s].to;
    }
    if (why) {
        clf__log(CLF__LOG_OUTPUT_CODE, "kernel-local names not applied (%s: %.*s)", why, (int)why_len, at);
        goto end;
    }
    clf__sb_puts(&out, copied);
    const char *renamed = clf__text_take(&out);
    if (!renamed)
        goto end;
    clf__text_release(*source);
    *source = renamed;
    done = true;
end:
    clf__sb_free(&out);
    clf__free(pv);
    clf__free(nv);
    return done;
}
