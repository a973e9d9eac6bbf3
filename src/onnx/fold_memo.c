/* Constant folds remembered across the imports of one model (fold_memo.h). */
#include "fold_memo.h"

#include <pthread.h>
#include <string.h>

#include "util/alloc.h"
#include "util/hash.h"

#define BUCKETS 1024 /* a power of two */

/* An entry is one block: this header, its outputs (their shape and data
 * pointers into the block), the key's bytes, then the outputs' shapes and
 * bytes. */
typedef struct entry {
    struct entry *next;
    uint64_t hash, attrs_read;
    size_t key_len;
    int nout;
    clf__fold_output *outs;
    const uint8_t *key;
} entry;

struct clf__fold_memo {
    pthread_mutex_t lock;
    entry *buckets[BUCKETS];
    size_t bytes; /* the entries' blocks */
};

clf__fold_memo *clf__fold_memo_new(void)
{
    clf__fold_memo *M = clf__calloc(1, sizeof *M);
    if (M)
        pthread_mutex_init(&M->lock, NULL);
    return M;
}

static void clear(clf__fold_memo *M)
{
    for (size_t b = 0; b < BUCKETS; b++) {
        for (entry *e = M->buckets[b], *next; e; e = next) {
            next = e->next;
            clf__free(e);
        }
        M->buckets[b] = NULL;
    }
    M->bytes = 0;
}

void clf__fold_memo_free(clf__fold_memo *M)
{
    if (!M)
        return;
    clear(M);
    pthread_mutex_destroy(&M->lock);
    clf__free(M);
}

static void put_bytes(uint8_t **at, const void *p, size_t n)
{
    if (n)
        memcpy(*at, p, n);
    *at += n;
}

bool clf__fold_memo_key_make(int node, const clf__onnx_tensor *const *ins, int nin, clf__fold_key *key)
{
    *key = (clf__fold_key){0};
    size_t len = sizeof node + sizeof nin;
    for (int k = 0; k < nin; k++) {
        len += 1;
        if (!ins[k])
            continue;
        const clf__onnx_tensor *T = ins[k];
        const size_t es = clf__onnx_elem_size(T->type.elem);
        if (!es || !T->type.has_shape || (T->n && !T->data))
            return false; /* strings, or no bytes to compare: not remembered */
        len += 2 * sizeof(int) + (size_t)T->type.rank * sizeof(int64_t) + sizeof T->n + T->n * es;
    }
    if (len > CLF__FOLD_MEMO_ENTRY_BYTES)
        return false; /* its entry could not be kept: no copy of large inputs at every import */
    uint8_t *b = clf__malloc(len), *at = b;
    if (!b)
        return false;
    put_bytes(&at, &node, sizeof node);
    put_bytes(&at, &nin, sizeof nin);
    for (int k = 0; k < nin; k++) {
        const clf__onnx_tensor *T = ins[k];
        *at++ = T != NULL;
        if (!T)
            continue;
        put_bytes(&at, &T->type.elem, sizeof T->type.elem);
        put_bytes(&at, &T->type.rank, sizeof T->type.rank);
        for (int d = 0; d < T->type.rank; d++)
            put_bytes(&at, &T->type.dims[d].value, sizeof(int64_t));
        put_bytes(&at, &T->n, sizeof T->n);
        put_bytes(&at, T->data, T->n * clf__onnx_elem_size(T->type.elem));
    }
    *key = (clf__fold_key){b, len, clf__hash_words(CLF__HASH_SEED, b, len)};
    return true;
}

void clf__fold_memo_key_free(clf__fold_key *key)
{
    clf__free(key->bytes);
    *key = (clf__fold_key){0};
}

static entry *find(clf__fold_memo *M, const clf__fold_key *key)
{
    for (entry *e = M->buckets[key->hash & (BUCKETS - 1)]; e; e = e->next)
        if (e->hash == key->hash && e->key_len == key->len && !memcmp(e->key, key->bytes, key->len))
            return e;
    return NULL;
}

bool clf__fold_memo_get(clf__fold_memo *M, const clf__fold_key *key, clf__fold_take take, void *ctx,
                        uint64_t *attrs_read, bool *stopped)
{
    *stopped = false;
    if (!M || !key->bytes)
        return false;
    pthread_mutex_lock(&M->lock);
    entry *e = find(M, key);
    for (int j = 0; e && j < e->nout && !*stopped; j++)
        *stopped = !take(ctx, &e->outs[j]);
    if (e)
        *attrs_read = e->attrs_read;
    pthread_mutex_unlock(&M->lock);
    return e && !*stopped;
}

/* n rounded up to a multiple of 8. */
static size_t up8(size_t n) { return (n + 7) & ~(size_t)7; }

void clf__fold_memo_put(clf__fold_memo *M, const clf__fold_key *key, const clf__fold_output *outs, int nout,
                        uint64_t attrs_read)
{
    if (!M || !key->bytes || nout < 0)
        return;
    size_t size = up8(sizeof(entry)) + up8((size_t)nout * sizeof(clf__fold_output)) + up8(key->len);
    for (int j = 0; j < nout; j++)
        size += up8((size_t)outs[j].rank * sizeof(int64_t)) + up8(outs[j].bytes);
    if (size > CLF__FOLD_MEMO_ENTRY_BYTES)
        return; /* one fold's literals should not crowd out the rest */
    uint8_t *block = clf__malloc(size);
    if (!block)
        return;
    entry *e = (entry *)block;
    uint8_t *at = block + up8(sizeof(entry));
    e->outs = (clf__fold_output *)at;
    at += up8((size_t)nout * sizeof(clf__fold_output));
    memcpy(at, key->bytes, key->len);
    e->key = at;
    at += up8(key->len);
    for (int j = 0; j < nout; j++) {
        e->outs[j] = outs[j];
        memcpy(at, outs[j].shape, (size_t)outs[j].rank * sizeof(int64_t));
        e->outs[j].shape = (const int64_t *)at;
        at += up8((size_t)outs[j].rank * sizeof(int64_t));
        if (outs[j].bytes)
            memcpy(at, outs[j].data, outs[j].bytes);
        e->outs[j].data = at;
        at += up8(outs[j].bytes);
    }
    e->hash = key->hash;
    e->attrs_read = attrs_read;
    e->key_len = key->len;
    e->nout = nout;
    pthread_mutex_lock(&M->lock);
    if (find(M, key)) { /* another import remembered it meanwhile */
        pthread_mutex_unlock(&M->lock);
        clf__free(block);
        return;
    }
    if (M->bytes + size > CLF__FOLD_MEMO_BYTES)
        clear(M);
    entry **b = &M->buckets[key->hash & (BUCKETS - 1)];
    e->next = *b;
    *b = e;
    M->bytes += size;
    pthread_mutex_unlock(&M->lock);
}
