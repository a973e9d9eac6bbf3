/* External tensor data. A model names files by relative paths that the
 * reader must keep inside the model's folder: absolute paths and ".."
 * components are refused outright, and the path, resolved with symbolic
 * links followed, must still lie under the folder's own resolved path (a
 * link pointing out of it is refused). Each file is mapped once, read-only
 * and private; the bytes of a tensor are never copied on the way to
 * clf_constant. Where a file cannot be mapped, the tensor's range is read. */
#define _XOPEN_SOURCE 700 /* realpath */
#include "onnx_external.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/alloc.h"

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

typedef struct mapped_file {
    struct mapped_file *next;
    char path[PATH_MAX]; /* resolved */
    void *map;           /* NULL when the file is empty or could not be mapped */
    size_t size;
} mapped_file;

struct clf__onnx_external {
    clf__onnx_arena *arena;
    char base[PATH_MAX]; /* the folder, resolved */
    mapped_file *files;
};

clf__onnx_external *clf__onnx_external_create(clf__onnx_arena *arena, const char *base_dir)
{
    clf__onnx_external *x = clf__onnx_alloc(arena, sizeof *x);
    if (!x)
        return NULL;
    x->arena = arena;
    /* An unresolvable folder leaves base empty: every lookup then fails
     * with the reason, naming the tensor. */
    if (!realpath(base_dir, x->base))
        x->base[0] = 0;
    return x;
}

#if defined(__GNUC__)
__attribute__((format(printf, 5, 6)))
#endif
static clf_status fail(clf_status st, const char *location, char *err, size_t cap, const char *fmt, ...)
{
    int n = snprintf(err, cap, "external data '%s': ", location);
    if (n >= 0 && (size_t)n < cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err + n, cap - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return st;
}

static void unmap(void *ctx)
{
    mapped_file *f = ctx;
    if (f->map)
        munmap(f->map, f->size);
    f->map = NULL;
}

static void free_block(void *ctx) { clf__free(ctx); }

/* Whether a component of the relative path s is "..". Such a path is
 * refused even where it would resolve inside the folder: a model has no
 * reason to climb, and refusing by name does not depend on what exists on
 * the disk when it is loaded. */
static bool has_dotdot(const char *s)
{
    for (const char *p = s; *p;) {
        const char *e = strchr(p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return true;
        p += n;
        while (*p == '/')
            p++;
    }
    return false;
}

/* The file's entry, opened and mapped on first use. */
static clf_status open_file(clf__onnx_external *x, const char *location, mapped_file **out, char *err, size_t cap)
{
    char joined[PATH_MAX], resolved[PATH_MAX];
    if (!x->base[0])
        return fail(CLF_ERR_IO, location, err, cap, "the model's folder cannot be resolved");
    int n = snprintf(joined, sizeof joined, "%s/%s", x->base, location);
    if (n < 0 || (size_t)n >= sizeof joined)
        return fail(CLF_ERR_MODEL, location, err, cap, "the path is too long");
    if (!realpath(joined, resolved))
        return fail(errno == ENOENT || errno == ENOTDIR ? CLF_ERR_MODEL : CLF_ERR_IO, location, err, cap,
                    "cannot open: %s", strerror(errno));
    size_t bl = strlen(x->base);
    bool inside = !strcmp(x->base, "/") ? resolved[0] == '/'
                                        : !strncmp(resolved, x->base, bl) && resolved[bl] == '/';
    if (!inside)
        return fail(CLF_ERR_MODEL, location, err, cap, "resolves to %s, outside the model's folder %s", resolved,
                    x->base);
    for (mapped_file *f = x->files; f; f = f->next)
        if (!strcmp(f->path, resolved)) {
            *out = f;
            return CLF_OK;
        }
    int fd = open(resolved, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fail(CLF_ERR_IO, location, err, cap, "cannot open: %s", strerror(errno));
    clf_status st = CLF_OK;
    struct stat sb;
    mapped_file *f = NULL;
    if (fstat(fd, &sb) != 0) {
        st = fail(CLF_ERR_IO, location, err, cap, "cannot stat: %s", strerror(errno));
        goto done;
    }
    if (!S_ISREG(sb.st_mode)) {
        st = fail(CLF_ERR_MODEL, location, err, cap, "is not a regular file");
        goto done;
    }
    f = clf__onnx_alloc(x->arena, sizeof *f);
    if (!f || !clf__onnx_defer(x->arena, unmap, f)) {
        st = fail(CLF_ERR_OUT_OF_MEMORY, location, err, cap, "out of memory");
        goto done;
    }
    memcpy(f->path, resolved, sizeof resolved);
    f->size = (size_t)sb.st_size;
    if (f->size && (uintmax_t)sb.st_size == (uintmax_t)f->size) {
        void *p = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
        f->map = p == MAP_FAILED ? NULL : p; /* read() below, range by range */
    }
    f->next = x->files;
    x->files = f;
    *out = f;
done:
    close(fd);
    return st;
}

/* Reads [offset, offset + bytes) of f into a block the arena frees. */
static clf_status read_range(clf__onnx_external *x, const mapped_file *f, const char *location, size_t offset,
                             size_t bytes, const void **data, char *err, size_t cap)
{
    char *buf = clf__malloc(bytes);
    if (!buf || !clf__onnx_defer(x->arena, free_block, buf)) {
        clf__free(buf);
        return fail(CLF_ERR_OUT_OF_MEMORY, location, err, cap, "out of memory reading %zu bytes", bytes);
    }
    int fd = open(f->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fail(CLF_ERR_IO, location, err, cap, "cannot open: %s", strerror(errno));
    size_t got = 0;
    while (got < bytes) {
        ssize_t r = pread(fd, buf + got, bytes - got, (off_t)(offset + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            int e = errno;
            close(fd);
            return r == 0 ? fail(CLF_ERR_MODEL, location, err, cap, "ends early, at byte %zu", offset + got)
                          : fail(CLF_ERR_IO, location, err, cap, "read error: %s", strerror(e));
        }
        got += (size_t)r;
    }
    close(fd);
    *data = buf;
    return CLF_OK;
}

clf_status clf__onnx_external_get(clf__onnx_external *x, const char *location, int64_t offset, int64_t length,
                                  size_t bytes, const void **data, char *err, size_t cap)
{
    *data = NULL;
    if (!location || !location[0])
        return fail(CLF_ERR_MODEL, location ? location : "", err, cap, "no location is given");
    if (location[0] == '/')
        return fail(CLF_ERR_MODEL, location, err, cap, "is an absolute path; external data must be a relative "
                    "path inside the model's folder");
    if (has_dotdot(location))
        return fail(CLF_ERR_MODEL, location, err, cap, "has a '..' component; external data must be inside the "
                    "model's folder");
    if (offset < 0)
        return fail(CLF_ERR_MODEL, location, err, cap, "offset %lld is negative", (long long)offset);
    if (length >= 0 && (uint64_t)length != bytes)
        return fail(CLF_ERR_MODEL, location, err, cap, "length %lld does not match the tensor's %zu bytes",
                    (long long)length, bytes);
    mapped_file *f;
    clf_status st = open_file(x, location, &f, err, cap);
    if (st)
        return st;
    if ((uint64_t)offset > f->size || bytes > f->size - (size_t)offset)
        return fail(CLF_ERR_MODEL, location, err, cap, "the file has %zu bytes; the tensor needs %zu from offset "
                    "%lld", f->size, bytes, (long long)offset);
    if (!bytes)
        return CLF_OK;
    if (f->map) {
        *data = (const char *)f->map + offset;
        return CLF_OK;
    }
    return read_range(x, f, location, (size_t)offset, bytes, data, err, cap);
}
