/* The on-disk program cache: built program binaries kept across processes.
 *
 * Key. The text of every field that changes a binary: platform vendor, name
 * and version; device vendor, name and version; driver version; address
 * bits; the library's codegen version and the embedded templates' hash; the
 * build options; the generated source. Each is written "name <length>:value"
 * on its own line, so two different sets of fields never give the same text.
 * A driver upgrade changes the driver or platform version, so it misses.
 *
 * Entries are files of cache_file.h (magic "CLFUSEPC", extension
 * ".clbin"): written atomically, checked when read.
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
#include "runtime/cache_file.h"
#include "runtime/driver_quirks.h"
#include "runtime/runtime_internal.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/sha256.h"
#include "util/strbuf.h"

#define MAGIC "CLFUSEPC"
#define FORMAT_VERSION 1u

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
        clf__cache_key_field(&sb, fields[i].name, v);
        clf__free(v);
    }
    cl_uint bits = 0;
    clGetDeviceInfo(ctx->device, CL_DEVICE_ADDRESS_BITS, sizeof bits, &bits, NULL);
    char num[32];
    snprintf(num, sizeof num, "%u", (unsigned)bits);
    clf__cache_key_field(&sb, "address-bits", num);
    snprintf(num, sizeof num, "%d", CLF__CODEGEN_VERSION);
    clf__cache_key_field(&sb, "codegen-version", num);
    clf__cache_key_field(&sb, "templates-hash", clf__templates_hash);
    return clf__sb_take(&sb);
}

static char *key_text(const clf_context *ctx, const char *source, const char *options)
{
    clf__strbuf sb = {0};
    clf__sb_puts(&sb, ctx->cache_device_key);
    clf__cache_key_field(&sb, "options", options);
    clf__cache_key_field(&sb, "source", source);
    return clf__sb_take(&sb);
}

static char *entry_path(const clf_context *ctx, const char *key)
{
    return clf__cache_entry_path(ctx->cache_dir, key, ".clbin");
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

cl_program clf__disk_cache_load(clf_context *ctx, const char *source, const char *options)
{
    if (!ctx->cache_dir)
        return NULL;
    char *key = key_text(ctx, source, options);
    char *path = key ? entry_path(ctx, key) : NULL;
    cl_program prog = NULL;
    clf__cache_entry entry = {0};
    char why[256];
    if (!path) {
        clf__log(CLF__LOG_CACHE, "disk cache skipped: out of memory");
        goto out;
    }
    if (!clf__cache_file_read(ctx, "disk", path, MAGIC, FORMAT_VERSION, key, &ctx->counts.disk_discards, &entry))
        goto out;
    size_t bl = entry.payload_len;
    const unsigned char *bin = entry.payload;
    cl_int binst = CL_SUCCESS, err = CL_SUCCESS;
    if (ctx->quirks & CLF__QUIRK_ABORTS_ON_FOREIGN_BINARY) {
        const clf__driver_quirk *q = clf__driver_quirk_row(ctx->desc.platform_name, ctx->desc.device_name,
                                                             CLF__QUIRK_ABORTS_ON_FOREIGN_BINARY);
        if (q && !q->binary_is_own(bin, bl)) {
            snprintf(why, sizeof why, "libclfuse rejected the binary for the driver: not in %s's own format (%s)",
                     q->platform, q->what);
            clf__cache_file_discard(ctx, "disk", path, &entry.st, &ctx->counts.disk_discards, why);
            goto out;
        }
    }
    prog = clCreateProgramWithBinary(ctx->cl, 1, &ctx->device, &bl, &bin, &binst, &err);
    if (!prog || binst != CL_SUCCESS) {
        snprintf(why, sizeof why, "the driver rejected the binary (clCreateProgramWithBinary: %s)",
                 clf__cl_error_name(prog ? binst : err));
        if (prog)
            clReleaseProgram(prog);
        prog = NULL;
        clf__cache_file_discard(ctx, "disk", path, &entry.st, &ctx->counts.disk_discards, why);
        goto out;
    }
    err = clBuildProgram(prog, 1, &ctx->device, options, NULL, NULL);
    if (err != CL_SUCCESS) {
        snprintf(why, sizeof why, "the driver rejected the binary (clBuildProgram: %s)", clf__cl_error_name(err));
        clReleaseProgram(prog);
        prog = NULL;
        clf__cache_file_discard(ctx, "disk", path, &entry.st, &ctx->counts.disk_discards, why);
        goto out;
    }
    count(ctx, &ctx->counts.disk_hits);
    clf__log(CLF__LOG_CACHE, "disk hit %s (%zu bytes)", path, bl);
out:
    clf__cache_entry_free(&entry);
    clf__free(path);
    clf__free(key);
    return prog;
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
    size_t blen = 0;
    unsigned char *bin = program_binary(ctx, prog, &blen);
    char *key = bin ? key_text(ctx, source, options) : NULL;
    char *path = key ? entry_path(ctx, key) : NULL;
    if (!bin)
        clf__log(CLF__LOG_CACHE, "disk store skipped: the driver gave no binary");
    else if (!path)
        clf__log(CLF__LOG_CACHE, "disk store skipped: out of memory");
    else if (clf__cache_file_write(ctx, "disk", ctx->cache_dir, path, MAGIC, FORMAT_VERSION, key, bin, blen))
        count(ctx, &ctx->counts.disk_stores);
    clf__free(path);
    clf__free(key);
    clf__free(bin);
}
