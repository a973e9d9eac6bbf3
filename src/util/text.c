/* Shared immutable strings (text.h): a header with the count and the
 * length, then the characters, in one allocation. */
#include "text.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "alloc.h"
#include "hash.h"

typedef struct {
    _Atomic size_t refs;
    size_t len;
    _Atomic uint64_t hash; /* of the characters, made at the first clf__text_hash */
    _Atomic bool hashed;
    char chars[];
} text_head;

static text_head *head_of(const char *t) { return (text_head *)(uintptr_t)(t - offsetof(text_head, chars)); }

const char *clf__text_new(const char *s, size_t len)
{
    if (len > SIZE_MAX - sizeof(text_head) - 1)
        return NULL;
    text_head *h = clf__malloc(sizeof *h + len + 1);
    if (!h)
        return NULL;
    atomic_init(&h->refs, 1);
    h->len = len;
    memcpy(h->chars, s, len);
    h->chars[len] = '\0';
    atomic_init(&h->hashed, false);
    return h->chars;
}

const char *clf__text_take(clf__strbuf *sb)
{
    if (!clf__sb_ok(sb) || !sb->data || sb->len > SIZE_MAX - sizeof(text_head) - 1) {
        const char *t = clf__sb_ok(sb) && !sb->data ? clf__text_new("", 0) : NULL;
        clf__sb_free(sb);
        return t;
    }
    /* The buffer itself becomes the text: its characters move up past the
     * header (most buffers have the room already, so the block stays put;
     * a copy into a new block touched fresh pages, a cost per source). */
    const size_t len = sb->len;
    text_head *h = clf__realloc(sb->data, sizeof *h + len + 1);
    if (!h) {
        clf__sb_free(sb);
        return NULL;
    }
    memmove(h->chars, h, len + 1);
    atomic_init(&h->refs, 1);
    h->len = len;
    atomic_init(&h->hashed, false);
    *sb = (clf__strbuf){0};
    return h->chars;
}

const char *clf__text_ref(const char *t)
{
    if (t)
        atomic_fetch_add_explicit(&head_of(t)->refs, 1, memory_order_relaxed);
    return t;
}

void clf__text_release(const char *t)
{
    if (t && atomic_fetch_sub_explicit(&head_of(t)->refs, 1, memory_order_acq_rel) == 1)
        clf__free(head_of(t));
}

size_t clf__text_len(const char *t) { return head_of(t)->len; }

uint64_t clf__text_hash(const char *t)
{
    /* Threads that find it unmade make the same value. */
    text_head *h = head_of(t);
    if (atomic_load_explicit(&h->hashed, memory_order_acquire))
        return atomic_load_explicit(&h->hash, memory_order_relaxed);
    const uint64_t v = clf__hash_words(CLF__HASH_SEED, h->chars, h->len);
    atomic_store_explicit(&h->hash, v, memory_order_relaxed);
    atomic_store_explicit(&h->hashed, true, memory_order_release);
    return v;
}
