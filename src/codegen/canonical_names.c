/* Kernel-local names in generated sources. Codegen writes the plan's buffer
 * and node ids into identifiers (parameter b18, reduction fields a->s_42 and
 * row->r_42, CLF_GIX_42 for a gather's indices); kernels that compute the
 * same thing on other tensors - the layers of a model - then differ only in
 * those numbers. Renaming them to ordinals within the kernel (b0, a->s_3,
 * CLF_GIX_1) gives such kernels one source: one OpenCL program built, one
 * entry in each cache. No template has an identifier of these forms.
 *
 * The renaming is exact or not done: every identifier token of the source
 * (comments, strings and numbers are copied as they are) found in the map is
 * replaced, and the source is left as generated when a new name is already
 * an identifier of the source that the map does not rename, or when a name
 * to rename follows a '.' and could be a vector component (.s1). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "util/alloc.h"
#include "util/log.h"
#include "util/strbuf.h"

typedef struct name_pair {
    char from[32], to[32];
} name_pair;

/* The fields and variables codegen names after a node id, the prefix then
 * '_' then the id (codegen_reduction.c, the index algebra's gathers). */
static const char *const node_prefixes[] = {"s_", "c_", "v_", "i_", "n_", "r_", "CLF_GIX_"};

static int cmp_from(const void *a, const void *b)
{
    return strcmp(((const name_pair *)a)->from, ((const name_pair *)b)->from);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static bool ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

static bool ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9'); }

/* Whether name could be a vector component after '.': s and hex digits. */
static bool maybe_component(const char *name)
{
    if (name[0] != 's' || !name[1])
        return false;
    for (const char *p = name + 1; *p; p++)
        if (!strchr("0123456789abcdefABCDEF", *p))
            return false;
    return true;
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

bool clf__cg_canonical_names(const uint32_t *params, uint32_t nparams, const uint32_t *nodes, uint32_t nnodes,
                             char **source)
{
    const size_t nprefix = sizeof node_prefixes / sizeof node_prefixes[0];
    const size_t nmap = nparams + (size_t)nnodes * nprefix;
    name_pair *map = clf__malloc((nmap ? nmap : 1) * sizeof *map);
    char **targets = clf__malloc((nmap ? nmap : 1) * sizeof *targets);
    clf__strbuf out = {0};
    bool done = false;
    if (!map || !targets)
        goto end;
    size_t n = 0;
    for (uint32_t p = 0; p < nparams; p++, n++) {
        snprintf(map[n].from, sizeof map[n].from, "b%u", params[p]);
        snprintf(map[n].to, sizeof map[n].to, "b%u", p);
    }
    for (uint32_t i = 0; i < nnodes; i++)
        for (size_t f = 0; f < nprefix; f++, n++) {
            snprintf(map[n].from, sizeof map[n].from, "%s%u", node_prefixes[f], nodes[i]);
            snprintf(map[n].to, sizeof map[n].to, "%s%u", node_prefixes[f], i);
        }
    qsort(map, n, sizeof *map, cmp_from);
    for (size_t i = 0; i + 1 < n; i++)
        if (!strcmp(map[i].from, map[i + 1].from))
            goto end; /* a node listed twice: not a plan codegen wrote */
    for (size_t i = 0; i < n; i++)
        targets[i] = map[i].to;
    qsort(targets, n, sizeof *targets, cmp_str);

    const char *src = *source, *why = NULL;
    char tok[32];
    for (const char *p = src; *p && !why;) {
        const char *e = skip_non_ident(p);
        if (e != p) {
            clf__sb_putn(&out, p, (size_t)(e - p));
            p = e;
            continue;
        }
        if (!ident_start(*p)) {
            clf__sb_putn(&out, p, 1);
            p++;
            continue;
        }
        for (e = p; ident_char(*e); e++)
            ;
        const size_t len = (size_t)(e - p);
        const name_pair *hit = NULL;
        if (len < sizeof tok) {
            memcpy(tok, p, len);
            tok[len] = '\0';
            name_pair key;
            memcpy(key.from, tok, len + 1);
            hit = bsearch(&key, map, n, sizeof *map, cmp_from);
            const char *t = tok;
            if (!hit && bsearch(&t, targets, n, sizeof *targets, cmp_str))
                why = "a new name is already used";
            else if (hit && p > src && p[-1] == '.' && maybe_component(tok))
                why = "a name to rename could be a vector component";
        }
        if (hit)
            clf__sb_puts(&out, hit->to);
        else
            clf__sb_putn(&out, p, len);
        p = e;
    }
    if (why) {
        clf__log(CLF__LOG_OUTPUT_CODE, "kernel-local names not applied (%s: %s)", why, tok);
        goto end;
    }
    if (!clf__sb_ok(&out))
        goto end;
    clf__free(*source);
    *source = clf__sb_take(&out);
    done = true;
end:
    clf__sb_free(&out);
    clf__free(map);
    clf__free(targets);
    return done;
}
