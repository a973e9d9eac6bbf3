/* SHA-256 (FIPS 180-4), for on-disk cache keys: a key collision must be
 * practically impossible, which a 64-bit FNV hash does not give. */
#ifndef CLFUSE_SHA256_H
#define CLFUSE_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct clf__sha256 {
    uint32_t h[8];
    uint64_t len; /* bytes hashed so far */
    unsigned char buf[64];
    size_t nbuf;
} clf__sha256;

void clf__sha256_init(clf__sha256 *s);
void clf__sha256_update(clf__sha256 *s, const void *data, size_t n);
void clf__sha256_final(clf__sha256 *s, unsigned char digest[32]);

#endif
