/* Cache entries on disk, shared by the program binary cache
 * (program_cache_disk.c) and the plan cache (plan_cache.c).
 *
 * Entry: a 40-byte little-endian header — an 8-byte magic naming the kind
 * of entry, format version (u32), zero (u32), key length (u64), payload
 * length (u64), FNV-1a 64 of the key text and the payload (u64) — then the
 * key text, then the payload. The file name is the first 128 bits of the
 * key text's SHA-256 in hex plus an extension; a load compares the whole
 * key text, so a hash collision is a miss, never a wrong entry.
 *
 * Writing: to "<name>.tmp.<pid>.<n>" in the cache directory (made with mode
 * 0700 when missing), then rename() over the entry: a reader sees a whole
 * old entry or a whole new one, and processes storing the same entry at
 * once all succeed (the last rename wins). No fsync: an entry torn by a
 * crash fails its length or checksum check and is rebuilt.
 *
 * Reading: a short file, a wrong magic or format version, a bad checksum or
 * a length that disagrees with the header is removed (unless another
 * process has replaced the file meanwhile) and counted as a discard. No
 * failure here fails a compile: everything is logged under
 * CLFUSE_LOGS=cache, as "<label> hit/miss/store ..." and "<label> entry
 * ... discarded: <why>". */
#ifndef CLFUSE_CACHE_FILE_H
#define CLFUSE_CACHE_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "runtime/runtime_internal.h"
#include "util/strbuf.h"

#define CLF__CACHE_HEADER_BYTES 40u

/* Appends "name <length>:value\n": no two sets of fields give one text. */
void clf__cache_key_field(clf__strbuf *sb, const char *name, const char *value);
/* "<dir>/<hex of SHA-256(key)[0..16)><ext>" (clf__malloc'd; NULL when out
 * of memory). */
char *clf__cache_entry_path(const char *dir, const char *key, const char *ext);

/* A loaded entry: payload points into data (owned). */
typedef struct clf__cache_entry {
    unsigned char *data;
    const unsigned char *payload;
    size_t payload_len;
    struct stat st; /* of the file read, for clf__cache_file_discard */
} clf__cache_entry;

/* Reads the entry at path for key; true with *out filled on a hit (free
 * with clf__cache_entry_free). Bad entries are removed and counted in
 * *discards (under ctx->lock). */
bool clf__cache_file_read(clf_context *ctx, const char *label, const char *path, const char magic[8],
                          uint32_t version, const char *key, uint64_t *discards, clf__cache_entry *out);
void clf__cache_entry_free(clf__cache_entry *e);
/* Removes the entry read as st (a payload the caller found bad), saying why. */
void clf__cache_file_discard(clf_context *ctx, const char *label, const char *path, const struct stat *st,
                             uint64_t *discards, const char *why);
/* Writes an entry atomically; true when stored. */
bool clf__cache_file_write(clf_context *ctx, const char *label, const char *dir, const char *path,
                           const char magic[8], uint32_t version, const char *key, const void *payload,
                           size_t len);

#endif
