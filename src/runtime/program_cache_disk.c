/* The on-disk program cache: built program binaries kept across processes.
 *
 * Key. The text of every field that changes a binary: platform vendor, name
 * and version; device vendor, name and version; driver version; address
 * bits; the library's codegen version and the embedded templates' hash; the
 * build options; the generated source. Each is written "name <length>:value"
 * on its own line, so two different sets of fields never give the same text.
 * A driver upgrade changes the driver or platform version, so it misses.
 *
 * File name: the first 128 bits of the key text's SHA-256, in hex, plus
 * ".clbin". The entry stores the whole key text and a load compares it, so a
 * hash collision is a miss (and the entry is overwritten), never a wrong
 * binary.
 *
 * Entry: a 40-byte little-endian header — magic "CLFUSEPC", format version
 * (u32), zero (u32), key length (u64), binary length (u64), FNV-1a 64 of the
 * key text and the binary (u64) — then the key text, then the binary.
 *
 * Writing: to "<name>.tmp.<pid>.<n>" in the cache directory (made with mode
 * 0700 when missing), then rename() over the entry. rename is atomic: a
 * reader sees a whole old entry or a whole new one, and processes storing the
 * same entry at once all succeed (the last rename wins; the binaries are
 * equivalent). There is no fsync: an entry torn by a crash fails its length
 * or checksum check and is rebuilt.
 *
 * Reading: a short file, a wrong magic or format version, a bad checksum, or
 * a binary the driver refuses (clCreateProgramWithBinary or clBuildProgram
 * fails) is removed and the caller builds from source. No failure here ever
 * fails a compile: it is logged under CLFUSE_LOGS=cache and the cache is
 * skipped for that call. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "util/alloc.h"
#include "codegen/templates.h"
#include "runtime/runtime_internal.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/sha256.h"
#include "util/strbuf.h"

#define MAGIC "CLFUSEPC"
#define FORMAT_VERSION 1u
#define HEADER_BYTES 40u
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

static void key_field(clf__strbuf *sb, const char *name, const char *value)
{
    clf__sb_printf(sb, "%s %zu:", name, strlen(value));
    clf__sb_puts(sb, value);
    clf__sb_puts(sb, "\n");
}

/* A platform or device info string (a heap copy; "" when the query fails). */
static char *info_str(cl_platform_id plat, cl_device_id dev, cl_uint param)
{
    size_t n = 0;
    cl_int err = plat ? clGetPlatformInfo(plat, param, 0, NULL, &n) : clGetDeviceInfo(dev, param, 0, NULL, &n);
    char *s = clf__malloc(err == CL_SUCCESS && n ? n + 1 : 1);
    if (!s)
        return NULL;
    s[0] = '\0';
    if (err == CL_SUCCESS && n) {
        err = plat ? clGetPlatformInfo(plat, param, n, s, NULL) : clGetDeviceInfo(dev, param, n, s, NULL);
        s[err == CL_SUCCESS ? n : 0] = '\0';
    }
    return s;
}

/* The key fields that depend on the device and the library, not on the
 * program: computed once per context. */
static char *device_key(const clf_context *ctx)
{
    static const struct {
        const char *name;
        bool platform;
        cl_uint param;
    } fields[] = {
        {"platform-vendor", true, CL_PLATFORM_VENDOR},
        {"platform-name", true, CL_PLATFORM_NAME},
        {"platform-version", true, CL_PLATFORM_VERSION},
        {"device-vendor", false, CL_DEVICE_VENDOR},
        {"device-name", false, CL_DEVICE_NAME},
        {"device-version", false, CL_DEVICE_VERSION},
        {"driver-version", false, CL_DRIVER_VERSION},
    };
    clf__strbuf sb = {0};
    clf__sb_printf(&sb, "clfuse program cache key %u\n", FORMAT_VERSION);
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        char *v = info_str(fields[i].platform ? ctx->platform : NULL, ctx->device, fields[i].param);
        if (!v) {
            clf__sb_free(&sb);
            return NULL;
        }
        key_field(&sb, fields[i].name, v);
        clf__free(v);
    }
    cl_uint bits = 0;
    clGetDeviceInfo(ctx->device, CL_DEVICE_ADDRESS_BITS, sizeof bits, &bits, NULL);
    char num[32];
    snprintf(num, sizeof num, "%u", (unsigned)bits);
    key_field(&sb, "address-bits", num);
    snprintf(num, sizeof num, "%d", CLF__CODEGEN_VERSION);
    key_field(&sb, "codegen-version", num);
    key_field(&sb, "templates-hash", clf__templates_hash);
    return clf__sb_take(&sb);
}

static char *key_text(const clf_context *ctx, const char *source, const char *options)
{
    clf__strbuf sb = {0};
    clf__sb_puts(&sb, ctx->cache_device_key);
    key_field(&sb, "options", options);
    key_field(&sb, "source", source);
    return clf__sb_take(&sb);
}

static char *entry_path(const clf_context *ctx, const char *key)
{
    clf__sha256 s;
    unsigned char d[32];
    clf__sha256_init(&s);
    clf__sha256_update(&s, key, strlen(key));
    clf__sha256_final(&s, d);
    clf__strbuf sb = {0};
    clf__sb_printf(&sb, "%s/", ctx->cache_dir);
    for (int i = 0; i < 16; i++)
        clf__sb_printf(&sb, "%02x", d[i]);
    clf__sb_puts(&sb, ".clbin");
    return clf__sb_take(&sb);
}

static uint64_t checksum(const char *key, size_t klen, const unsigned char *bin, size_t blen)
{
    return clf__hash_bytes(clf__hash_bytes(CLF__HASH_SEED, key, klen), bin, blen);
}

void clf__disk_cache_init(clf_context *ctx, bool disable)
{
    ctx->cache_dir = NULL;
    ctx->cache_device_key = NULL;
    const char *env = getenv("CLFUSE_CACHE");
    if (disable || (env && strcmp(env, "0") == 0)) {
        clf__log(CLF__LOG_CACHE, "disk cache off (%s)",
                 disable ? "clf_context_params.disable_disk_cache" : "CLFUSE_CACHE=0");
        return;
    }
    clf__strbuf dir = {0};
    const char *v;
    if ((v = getenv("CLFUSE_CACHE_DIR")) && *v)
        clf__sb_puts(&dir, v);
    else if ((v = getenv("XDG_CACHE_HOME")) && *v)
        clf__sb_printf(&dir, "%s/clfuse", v);
    else if ((v = getenv("HOME")) && *v)
        clf__sb_printf(&dir, "%s/.cache/clfuse", v);
    else {
        clf__log(CLF__LOG_CACHE, "disk cache off: none of CLFUSE_CACHE_DIR, XDG_CACHE_HOME, HOME is set");
        return;
    }
    ctx->cache_dir = clf__sb_take(&dir);
    ctx->cache_device_key = ctx->cache_dir ? device_key(ctx) : NULL;
    if (!ctx->cache_device_key) {
        clf__free(ctx->cache_dir);
        ctx->cache_dir = NULL;
        clf__log(CLF__LOG_CACHE, "disk cache off: out of memory");
        return;
    }
    clf__log(CLF__LOG_CACHE, "disk cache in %s", ctx->cache_dir);
}

void clf__disk_cache_free(clf_context *ctx)
{
    clf__free(ctx->cache_dir);
    clf__free(ctx->cache_device_key);
    ctx->cache_dir = ctx->cache_device_key = NULL;
}

char *clf__disk_cache_path(const clf_context *ctx, const char *source, const char *options)
{
    if (!ctx->cache_dir)
        return NULL;
    char *key = key_text(ctx, source, options);
    char *path = key ? entry_path(ctx, key) : NULL;
    clf__free(key);
    return path;
}

static void count(clf_context *ctx, uint64_t *counter)
{
    pthread_mutex_lock(&ctx->lock);
    (*counter)++;
    pthread_mutex_unlock(&ctx->lock);
}

/* Removes the entry we read, unless another process has already replaced it
 * with a new file since (then that one is left alone). */
static void discard(clf_context *ctx, const char *path, const struct stat *read, const char *why)
{
    struct stat now;
    if (stat(path, &now) == 0 && now.st_dev == read->st_dev && now.st_ino == read->st_ino)
        unlink(path);
    count(ctx, &ctx->counts.disk_discards);
    clf__log(CLF__LOG_CACHE, "disk entry %s discarded: %s", path, why);
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

cl_program clf__disk_cache_load(clf_context *ctx, const char *source, const char *options)
{
    if (!ctx->cache_dir)
        return NULL;
    char *key = key_text(ctx, source, options);
    char *path = key ? entry_path(ctx, key) : NULL;
    unsigned char *data = NULL;
    cl_program prog = NULL;
    char why[256], eb[128];
    int fd = -1;
    if (!path) {
        clf__log(CLF__LOG_CACHE, "disk cache skipped: out of memory");
        goto out;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        clf__log(CLF__LOG_CACHE, "disk miss %s: %s", path,
                 errno == ENOENT ? "no entry" : errno_str(errno, eb, sizeof eb));
        goto out;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        clf__log(CLF__LOG_CACHE, "disk miss %s: not a readable regular file", path);
        goto out;
    }
    uint64_t size = (uint64_t)st.st_size;
    if (size < HEADER_BYTES) {
        snprintf(why, sizeof why, "truncated (%llu bytes, the header alone is %u)", (unsigned long long)size,
                 HEADER_BYTES);
        discard(ctx, path, &st, why);
        goto out;
    }
    if (size > MAX_ENTRY_BYTES || !(data = clf__malloc((size_t)size))) {
        clf__log(CLF__LOG_CACHE, "disk miss %s: %llu bytes is too large to read", path, (unsigned long long)size);
        goto out;
    }
    if (!read_all(fd, data, (size_t)size)) {
        discard(ctx, path, &st, "truncated (short read)");
        goto out;
    }
    uint64_t klen = get_u64(data + 16), blen = get_u64(data + 24);
    size_t want_klen = strlen(key);
    if (memcmp(data, MAGIC, 8) != 0) {
        discard(ctx, path, &st, "bad magic");
        goto out;
    }
    if (get_u32(data + 8) != FORMAT_VERSION) {
        snprintf(why, sizeof why, "format version %u, this library writes %u", (unsigned)get_u32(data + 8),
                 FORMAT_VERSION);
        discard(ctx, path, &st, why);
        goto out;
    }
    if (klen > size || blen > size || HEADER_BYTES + klen + blen != size || blen == 0) {
        snprintf(why, sizeof why, "truncated or padded (%llu bytes, the header says %llu)",
                 (unsigned long long)size, (unsigned long long)(HEADER_BYTES + klen + blen));
        discard(ctx, path, &st, why);
        goto out;
    }
    const unsigned char *bin = data + HEADER_BYTES + klen;
    if (checksum((const char *)data + HEADER_BYTES, (size_t)klen, bin, (size_t)blen) != get_u64(data + 32)) {
        discard(ctx, path, &st, "checksum mismatch");
        goto out;
    }
    if (klen != want_klen || memcmp(data + HEADER_BYTES, key, want_klen) != 0) {
        /* A valid entry for another key with the same hash: leave it; the
         * store after our build replaces it. */
        clf__log(CLF__LOG_CACHE, "disk miss %s: the entry holds another key (hash collision)", path);
        goto out;
    }
    size_t bl = (size_t)blen;
    cl_int binst = CL_SUCCESS, err = CL_SUCCESS;
    prog = clCreateProgramWithBinary(ctx->cl, 1, &ctx->device, &bl, &bin, &binst, &err);
    if (!prog || binst != CL_SUCCESS) {
        snprintf(why, sizeof why, "the driver rejected the binary (clCreateProgramWithBinary: %s)",
                 clf__cl_error_name(prog ? binst : err));
        if (prog)
            clReleaseProgram(prog);
        prog = NULL;
        discard(ctx, path, &st, why);
        goto out;
    }
    err = clBuildProgram(prog, 1, &ctx->device, options, NULL, NULL);
    if (err != CL_SUCCESS) {
        snprintf(why, sizeof why, "the driver rejected the binary (clBuildProgram: %s)", clf__cl_error_name(err));
        clReleaseProgram(prog);
        prog = NULL;
        discard(ctx, path, &st, why);
        goto out;
    }
    count(ctx, &ctx->counts.disk_hits);
    clf__log(CLF__LOG_CACHE, "disk hit %s (%llu bytes)", path, (unsigned long long)blen);
out:
    if (fd >= 0)
        close(fd);
    clf__free(data);
    clf__free(path);
    clf__free(key);
    return prog;
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

/* prog's binary for ctx's device (malloc'd), or NULL. */
static unsigned char *program_binary(const clf_context *ctx, cl_program prog, size_t *len)
{
    cl_uint ndev = 0;
    *len = 0;
    if (clGetProgramInfo(prog, CL_PROGRAM_NUM_DEVICES, sizeof ndev, &ndev, NULL) != CL_SUCCESS || !ndev)
        return NULL;
    cl_device_id *devs = clf__calloc(ndev, sizeof *devs);
    size_t *sizes = clf__calloc(ndev, sizeof *sizes);
    unsigned char **bins = clf__calloc(ndev, sizeof *bins);
    unsigned char *bin = NULL;
    cl_uint me = ndev;
    if (!devs || !sizes || !bins ||
        clGetProgramInfo(prog, CL_PROGRAM_DEVICES, ndev * sizeof *devs, devs, NULL) != CL_SUCCESS ||
        clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, ndev * sizeof *sizes, sizes, NULL) != CL_SUCCESS)
        goto out;
    for (cl_uint i = 0; i < ndev; i++)
        if (devs[i] == ctx->device)
            me = i;
    if (me == ndev || sizes[me] == 0 || !(bin = clf__malloc(sizes[me])))
        goto out;
    bins[me] = bin; /* NULL entries: the driver skips those devices */
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, ndev * sizeof *bins, bins, NULL) != CL_SUCCESS) {
        clf__free(bin);
        bin = NULL;
        goto out;
    }
    *len = sizes[me];
out:
    clf__free(devs);
    clf__free(sizes);
    clf__free(bins);
    return bin;
}

void clf__disk_cache_store(clf_context *ctx, const char *source, const char *options, cl_program prog)
{
    if (!ctx->cache_dir)
        return;
    char eb[128];
    size_t blen = 0;
    unsigned char *bin = program_binary(ctx, prog, &blen);
    char *key = bin ? key_text(ctx, source, options) : NULL;
    char *path = key ? entry_path(ctx, key) : NULL;
    clf__strbuf tmp = {0};
    int fd = -1;
    if (!bin) {
        clf__log(CLF__LOG_CACHE, "disk store skipped: the driver gave no binary");
        goto out;
    }
    if (!path) {
        clf__log(CLF__LOG_CACHE, "disk store skipped: out of memory");
        goto out;
    }
    if (!make_dirs(ctx->cache_dir)) {
        clf__log(CLF__LOG_CACHE, "disk store skipped: cannot make %s: %s", ctx->cache_dir,
                 errno_str(errno, eb, sizeof eb));
        goto out;
    }
    clf__sb_printf(&tmp, "%s.tmp.%ld.%u", path, (long)getpid(), atomic_fetch_add(&tmp_counter, 1));
    if (!clf__sb_ok(&tmp)) {
        clf__log(CLF__LOG_CACHE, "disk store skipped: out of memory");
        goto out;
    }
    fd = open(clf__sb_str(&tmp), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        clf__log(CLF__LOG_CACHE, "disk store skipped: cannot create %s: %s", clf__sb_str(&tmp),
                 errno_str(errno, eb, sizeof eb));
        goto out;
    }
    size_t klen = strlen(key);
    unsigned char header[HEADER_BYTES];
    memcpy(header, MAGIC, 8);
    put_u32(header + 8, FORMAT_VERSION);
    put_u32(header + 12, 0);
    put_u64(header + 16, klen);
    put_u64(header + 24, blen);
    put_u64(header + 32, checksum(key, klen, bin, blen));
    bool ok = write_all(fd, header, sizeof header) && write_all(fd, key, klen) && write_all(fd, bin, blen);
    int werr = errno;
    if (close(fd) != 0 && ok) {
        ok = false;
        werr = errno;
    }
    fd = -1;
    if (!ok || rename(clf__sb_str(&tmp), path) != 0) {
        clf__log(CLF__LOG_CACHE, "disk store of %s failed: %s", path, errno_str(ok ? errno : werr, eb, sizeof eb));
        unlink(clf__sb_str(&tmp));
        goto out;
    }
    count(ctx, &ctx->counts.disk_stores);
    clf__log(CLF__LOG_CACHE, "disk store %s (%zu bytes)", path, blen);
out:
    if (fd >= 0)
        close(fd);
    clf__sb_free(&tmp);
    clf__free(path);
    clf__free(key);
    clf__free(bin);
}
