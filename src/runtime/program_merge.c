/* One program for several kernel sources: where a driver's build has a
 * large fixed cost per program (PoCL 3.1: ~95 ms whatever the program
 * holds, bench/results/2026-12-03-cold-compile-threads.md), a graph's
 * distinct sources are built as one translation unit.
 *
 * Generated sources name everything they define at file scope clf_*
 * (helpers, typedefs, kernel functions) and configure themselves with
 * macros. Source i goes in with every identifier that starts with "clf_"
 * given the prefix "clfk<i>_" instead (a prefix, so that names pasted
 * from a clf_ stem, clf_acc##k, stay consistent), and is followed by an
 * #undef of every macro it defines, so that the next source's #ifndef
 * defaults and definitions start clean. A source that broke the
 * convention would fail to build merged; the caller then builds the
 * sources apart. */
#include <stdio.h>
#include <string.h>

#include "runtime/program_merge.h"
#include "util/alloc.h"
#include "util/strbuf.h"

static bool ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

static bool ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9'); }

/* Appends src up to end with its clf_ identifiers renamed for source
 * index i. */
static void put_renamed(clf__strbuf *sb, const char *src, const char *end, size_t i)
{
    const char *p = src;
    while (p < end) {
        if (ident_start(*p) && (p == src || !ident_char(p[-1]))) {
            const char *q = p;
            while (q < end && ident_char(*q))
                q++;
            if (q - p > 4 && strncmp(p, "clf_", 4) == 0) {
                clf__sb_printf(sb, "clfk%zu_", i);
                clf__sb_putn(sb, p + 4, (size_t)(q - p - 4));
            } else
                clf__sb_putn(sb, p, (size_t)(q - p));
            p = q;
        } else {
            const char *q = p + 1;
            while (q < end && !ident_start(*q))
                q++;
            clf__sb_putn(sb, p, (size_t)(q - p));
            p = q;
        }
    }
}

static const char *skip_blanks(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

/* Appends "#undef NAME" for every "#define NAME" line of src (its
 * renamed name where it is a clf_ one). */
static void put_undefs(clf__strbuf *sb, const char *src, size_t i)
{
    for (const char *line = src; line && *line;) {
        const char *p = skip_blanks(line);
        if (*p == '#') {
            p = skip_blanks(p + 1);
            if (strncmp(p, "define", 6) == 0 && (p[6] == ' ' || p[6] == '\t')) {
                const char *name = skip_blanks(p + 6), *q = name;
                while (ident_char(*q))
                    q++;
                if (q > name && ident_start(*name)) {
                    clf__sb_puts(sb, "#undef ");
                    put_renamed(sb, name, q, i);
                    clf__sb_puts(sb, "\n");
                }
            }
        }
        line = strchr(line, '\n');
        if (line)
            line++;
    }
}

char *clf__merge_sources(const char *const *sources, size_t n)
{
    clf__strbuf sb = {0};
    clf__sb_printf(&sb, "/* %zu kernel sources in one program (program_merge.c) */\n", n);
    for (size_t i = 0; i < n; i++) {
        clf__sb_printf(&sb, "\n/* ---- source %zu of %zu ---- */\n", i + 1, n);
        put_renamed(&sb, sources[i], sources[i] + strlen(sources[i]), i);
        clf__sb_puts(&sb, "\n");
        put_undefs(&sb, sources[i], i);
    }
    if (!clf__sb_ok(&sb)) {
        clf__sb_free(&sb);
        return NULL;
    }
    return clf__sb_take(&sb);
}

char *clf__merged_name(const char *entry, size_t i)
{
    if (!entry)
        return NULL;
    clf__strbuf sb = {0};
    put_renamed(&sb, entry, entry + strlen(entry), i);
    if (!clf__sb_ok(&sb)) {
        clf__sb_free(&sb);
        return NULL;
    }
    return clf__sb_take(&sb);
}
