#include "util/strbuf.h"
#include "util/alloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void clf__sb_free(clf__strbuf *sb)
{
    clf__free(sb->data);
    *sb = (clf__strbuf){0};
}

void clf__sb_clear(clf__strbuf *sb)
{
    sb->len = 0;
    if (sb->data)
        sb->data[0] = '\0';
}

static bool reserve(clf__strbuf *sb, size_t extra)
{
    if (sb->failed)
        return false;
    if (sb->len + extra + 1 <= sb->cap)
        return true;
    size_t cap = sb->cap ? sb->cap : 256;
    while (cap < sb->len + extra + 1) {
        if (cap > ((size_t)-1) / 2) {
            sb->failed = true;
            return false;
        }
        cap *= 2;
    }
    char *p = clf__realloc(sb->data, cap);
    if (!p) {
        sb->failed = true;
        return false;
    }
    sb->data = p;
    sb->cap = cap;
    return true;
}

void clf__sb_putn(clf__strbuf *sb, const char *s, size_t n)
{
    if (!reserve(sb, n))
        return;
    memcpy(sb->data + sb->len, s, n);
    sb->len += n;
    sb->data[sb->len] = '\0';
}

void clf__sb_puts(clf__strbuf *sb, const char *s) { clf__sb_putn(sb, s, strlen(s)); }

void clf__sb_put_i64(clf__strbuf *sb, long long v)
{
    char d[24], *p = d + sizeof d;
    unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
    do
        *--p = (char)('0' + u % 10);
    while ((u /= 10) != 0);
    if (v < 0)
        *--p = '-';
    clf__sb_putn(sb, p, (size_t)(d + sizeof d - p));
}

void clf__sb_put_hex(clf__strbuf *sb, unsigned long long v, int width)
{
    char d[16], *p = d + sizeof d;
    do
        *--p = "0123456789abcdef"[v & 15u];
    while ((v >>= 4) != 0);
    while (p > d && d + sizeof d - p < width)
        *--p = '0';
    clf__sb_putn(sb, p, (size_t)(d + sizeof d - p));
}

void clf__sb_reserve(clf__strbuf *sb, size_t extra)
{
    if (reserve(sb, extra) && sb->data)
        sb->data[sb->len] = '\0';
}

/* Formats into the room the buffer has, and again after growing it only
 * when that was too little (code generation writes most of its text
 * through here: one pass instead of a measuring one and a writing one). */
void clf__sb_printf(clf__strbuf *sb, const char *fmt, ...)
{
    if (sb->failed)
        return;
    va_list ap;
    va_start(ap, fmt);
    const size_t room = sb->data ? sb->cap - sb->len : 0;
    int n = vsnprintf(room ? sb->data + sb->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < room) {
        sb->len += (size_t)n;
        return;
    }
    if (n < 0 || !reserve(sb, (size_t)n)) {
        sb->failed = true;
        if (sb->data)
            sb->data[sb->len] = '\0'; /* what a first pass that did not fit wrote */
        return;
    }
    va_start(ap, fmt);
    vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb->len += (size_t)n;
}

bool clf__sb_ok(const clf__strbuf *sb) { return !sb->failed; }

const char *clf__sb_str(const clf__strbuf *sb) { return sb->data ? sb->data : ""; }

char *clf__sb_take(clf__strbuf *sb)
{
    char *p = NULL;
    if (!sb->failed) {
        p = sb->data ? sb->data : clf__calloc(1, 1);
        sb->data = NULL;
    }
    clf__sb_free(sb);
    return p;
}

char *clf__strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = clf__malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}
