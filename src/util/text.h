/* Immutable strings shared by a reference count: what a generated kernel's
 * source is, so that the kernel memo, the executables and the source lift
 * hold one copy of a source between them instead of one each.
 *
 * A text is a plain NUL-terminated `const char *` to read; its count and
 * length lie just before the characters, so only these functions may make
 * or free one (clf__free on a text is a bug). Texts are never changed once
 * made: two holders of one pointer hold the same characters for as long as
 * either keeps its reference. */
#ifndef CLFUSE_UTIL_TEXT_H
#define CLFUSE_UTIL_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "strbuf.h"

/* A text of the len bytes at s (a copy), or NULL when out of memory. */
const char *clf__text_new(const char *s, size_t len);
/* A text of sb's contents, sb freed either way; NULL when sb failed or
 * memory ran out. */
const char *clf__text_take(clf__strbuf *sb);
/* Another reference to t (t itself; NULL stays NULL). */
const char *clf__text_ref(const char *t);
/* Drops a reference; the last one frees the text. NULL does nothing. */
void clf__text_release(const char *t);
/* strlen(t), without reading the characters. */
size_t clf__text_len(const char *t);
/* A 64-bit hash of the characters (util/hash.h's clf__hash_words), made
 * at the first call and kept: texts of equal characters have equal
 * hashes. */
uint64_t clf__text_hash(const char *t);

#endif
