/* A growing NUL-terminated string. Allocation failure is sticky: later
 * appends do nothing and clf__sb_ok() reports it, so callers check once. */
#ifndef CLFUSE_STRBUF_H
#define CLFUSE_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct clf__strbuf {
    char *data;
    size_t len, cap;
    bool failed;
} clf__strbuf;

void clf__sb_free(clf__strbuf *sb);
void clf__sb_puts(clf__strbuf *sb, const char *s);
void clf__sb_putn(clf__strbuf *sb, const char *s, size_t n);
/* Makes room for extra more bytes at once (a failure marks the buffer
 * failed, as a put would). */
void clf__sb_reserve(clf__strbuf *sb, size_t extra);
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void clf__sb_printf(clf__strbuf *sb, const char *fmt, ...);
/* Appends v in decimal (what printf's %lld writes, without its cost:
 * keys built a field at a time). */
void clf__sb_put_i64(clf__strbuf *sb, long long v);
/* Appends v in lower-case hexadecimal, zero-padded to width digits (what
 * printf's %0<width>llx writes; width 0: %llx). */
void clf__sb_put_hex(clf__strbuf *sb, unsigned long long v, int width);
bool clf__sb_ok(const clf__strbuf *sb);
/* The contents ("" when empty); valid until the next append. */
const char *clf__sb_str(const clf__strbuf *sb);
/* Hands the heap string to the caller (NULL after a failure) and resets sb. */
char *clf__sb_take(clf__strbuf *sb);
void clf__sb_clear(clf__strbuf *sb);
/* A heap copy of s (NULL when out of memory). */
char *clf__strdup(const char *s);

#endif
