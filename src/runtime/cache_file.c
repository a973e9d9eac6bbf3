/* Cache entries on disk: the header, atomic writes, checked reads (see
 * cache_file.h). */
#include "runtime/cache_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/alloc.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/sha256.h"

/* An entry larger than this is not ours: refuse to read it whole. */
#define MAX_ENTRY_BYTES ((uint64_t)1 << 30)

static _Atomic unsigned tmp_counter;

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static const char *errno_str(int e, char *buf, size_t cap)
{
    if (strerror_r(e, buf, cap) != 0)
        snprintf(buf, cap, "errno %d", e);
    return buf;
}

void clf__cache_key_field(clf__strbuf *sb, const char *name, const char *value)
{
    clf__sb_printf(sb, "%s %zu:", name, strlen(value));
    clf__sb_puts(sb, value);
    clf__sb_puts(sb, "\n");
}

char *clf__cache_entry_path(const char *dir, const char *key, const char *ext)
{
    clf__sha256 s;
    unsigned char d[32];
    clf__sha256_init(&s);
    clf__sha256_update(&s, key, strlen(key));
    clf__sha256_final(&s, d);
    clf__strbuf sb = {0};
    clf__sb_printf(&sb, "%s/", dir);
    for (int i = 0; i < 16; i++)
        clf__sb_printf(&sb, "%02x", d[i]);
    clf__sb_puts(&sb, ext);
    return clf__sb_take(&sb);
}

static uint64_t checksum(const char *key, size_t klen, const unsigned char *payload, size_t plen)
{
    return clf__hash_bytes(clf__hash_bytes(CLF__HASH_SEED, key, klen), payload, plen);
}

void clf__cache_file_discard(clf_context *ctx, const char *label, const char *path, const struct stat *st,
                             uint64_t *discards, const char *why)
{
    /* Only the file we read: another process may have replaced it since. */
    struct stat now;
    if (stat(path, &now) == 0 && now.st_dev == st->st_dev && now.st_ino == st->st_ino)
        unlink(path);
    pthread_mutex_lock(&ctx->lock);
    (*discards)++;
    pthread_mutex_unlock(&ctx->lock);
    clf__log(CLF__LOG_CACHE, "%s entry %s discarded: %s", label, path, why);
}

/* Reads exactly n bytes; false on a short read or an error. */
static bool read_all(int fd, unsigned char *p, size_t n)
{
    while (n) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        p += r;
        n -= (size_t)r;
    }
    return true;
}

static bool write_all(int fd, const void *data, size_t n)
{
    const unsigned char *p = data;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

void clf__cache_entry_free(clf__cache_entry *e)
{
    clf__free(e->data);
    e->data = NULL;
    e->payload = NULL;
    e->payload_len = 0;
}

bool clf__cache_file_read(clf_context *ctx, const char *label, const char *path, const char magic[8],
                          uint32_t version, const char *key, uint64_t *discards, clf__cache_entry *out)
{
    memset(out, 0, sizeof *out);
    unsigned char *data = NULL;
    char why[256], eb[128];
    bool hit = false;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        clf__log(CLF__LOG_CACHE, "%s miss %s: %s", label, path,
                 errno == ENOENT ? "no entry" : errno_str(errno, eb, sizeof eb));
        goto out;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        clf__log(CLF__LOG_CACHE, "%s miss %s: not a readable regular file", label, path);
        goto out;
    }
    uint64_t size = (uint64_t)st.st_size;
    if (size < CLF__CACHE_HEADER_BYTES) {
        snprintf(why, sizeof why, "truncated (%llu bytes, the header alone is %u)", (unsigned long long)size,
                 CLF__CACHE_HEADER_BYTES);
        clf__cache_file_discard(ctx, label, path, &st, discards, why);
        goto out;
    }
    if (size > MAX_ENTRY_BYTES || !(data = clf__malloc((size_t)size))) {
        clf__log(CLF__LOG_CACHE, "%s miss %s: %llu bytes is too large to read", label, path,
                 (unsigned long long)size);
        goto out;
    }
    if (!read_all(fd, data, (size_t)size)) {
        clf__cache_file_discard(ctx, label, path, &st, discards, "truncated (short read)");
        goto out;
    }
    uint64_t klen = get_u64(data + 16), plen = get_u64(data + 24);
    size_t want_klen = strlen(key);
    if (memcmp(data, magic, 8) != 0) {
        clf__cache_file_discard(ctx, label, path, &st, discards, "bad magic");
        goto out;
    }
    if (get_u32(data + 8) != version) {
        snprintf(why, sizeof why, "format version %u, this library writes %u", (unsigned)get_u32(data + 8),
                 (unsigned)version);
        clf__cache_file_discard(ctx, label, path, &st, discards, why);
        goto out;
    }
    if (klen > size || plen > size || CLF__CACHE_HEADER_BYTES + klen + plen != size || plen == 0) {
        snprintf(why, sizeof why, "truncated or padded (%llu bytes, the header says %llu)",
                 (unsigned long long)size, (unsigned long long)(CLF__CACHE_HEADER_BYTES + klen + plen));
        clf__cache_file_discard(ctx, label, path, &st, discards, why);
        goto out;
    }
    const unsigned char *payload = data + CLF__CACHE_HEADER_BYTES + klen;
    if (checksum((const char *)data + CLF__CACHE_HEADER_BYTES, (size_t)klen, payload, (size_t)plen) !=
        get_u64(data + 32)) {
        clf__cache_file_discard(ctx, label, path, &st, discards, "checksum mismatch");
        goto out;
    }
    if (klen != want_klen || memcmp(data + CLF__CACHE_HEADER_BYTES, key, want_klen) != 0) {
        /* A valid entry for another key with the same hash: leave it; the
         * store after our build replaces it. */
        clf__log(CLF__LOG_CACHE, "%s miss %s: the entry holds another key (hash collision)", label, path);
        goto out;
    }
    out->data = data;
    out->payload = payload;
    out->payload_len = (size_t)plen;
    out->st = st;
    data = NULL;
    hit = true;
out:
    if (fd >= 0)
        close(fd);
    clf__free(data);
    return hit;
}

/* mkdir -p with mode 0700 for the directories it makes. */
static bool make_dirs(const char *dir)
{
    char *p = clf__strdup(dir);
    if (!p)
        return false;
    bool ok = true;
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s != '\0')
            continue;
        char c = *s;
        *s = '\0';
        if (mkdir(p, 0700) != 0 && errno != EEXIST) {
            ok = false;
            break;
        }
        *s = c;
        if (!c)
            break;
    }
    struct stat st;
    ok = ok && stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
    clf__free(p);
    return ok;
}

bool clf__cache_file_write(clf_context *ctx, const char *label, const char *dir, const char *path,
                           const char magic[8], uint32_t version, const char *key, const void *payload,
                           size_t len)
{
    char eb[128];
    clf__strbuf tmp = {0};
    int fd = -1;
    bool stored = false;
    if (!make_dirs(dir)) {
        clf__log(CLF__LOG_CACHE, "%s store skipped: cannot make %s: %s", label, dir, errno_str(errno, eb, sizeof eb));
        goto out;
    }
    clf__sb_printf(&tmp, "%s.tmp.%ld.%u", path, (long)getpid(), atomic_fetch_add(&tmp_counter, 1));
    if (!clf__sb_ok(&tmp)) {
        clf__log(CLF__LOG_CACHE, "%s store skipped: out of memory", label);
        goto out;
    }
    fd = open(clf__sb_str(&tmp), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        clf__log(CLF__LOG_CACHE, "%s store skipped: cannot create %s: %s", label, clf__sb_str(&tmp),
                 errno_str(errno, eb, sizeof eb));
        goto out;
    }
    size_t klen = strlen(key);
    unsigned char header[CLF__CACHE_HEADER_BYTES];
    memcpy(header, magic, 8);
    put_u32(header + 8, version);
    put_u32(header + 12, 0);
    put_u64(header + 16, klen);
    put_u64(header + 24, len);
    put_u64(header + 32, checksum(key, klen, payload, len));
    bool ok = write_all(fd, header, sizeof header) && write_all(fd, key, klen) && write_all(fd, payload, len);
    int werr = errno;
    if (close(fd) != 0 && ok) {
        ok = false;
        werr = errno;
    }
    fd = -1;
    if (!ok || rename(clf__sb_str(&tmp), path) != 0) {
        clf__log(CLF__LOG_CACHE, "%s store of %s failed: %s", label, path, errno_str(ok ? errno : werr, eb, sizeof eb));
        unlink(clf__sb_str(&tmp));
        goto out;
    }
    stored = true;
    clf__log(CLF__LOG_CACHE, "%s store %s (%zu bytes)", label, path, len);
out:
    if (fd >= 0)
        close(fd);
    clf__sb_free(&tmp);
    return stored;
}
