/* Reading and writing NumPy .npy files; see npy.h. The header is a Python
 * dict literal such as {'descr': '<f4', 'fortran_order': False, 'shape': (3,), }
 * which is parsed just far enough for those three keys. */
#include "npy.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *npy_shape_str(int rank, const int64_t *shape, char *buf, size_t cap)
{
    size_t n = (size_t)snprintf(buf, cap, "(");
    for (int d = 0; d < rank && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, d ? ", %lld" : "%lld", (long long)shape[d]);
    if (n < cap)
        snprintf(buf + n, cap - n, rank == 1 ? ",)" : ")");
    return buf;
}

/* Finds 'key': in the header and returns what follows, or NULL. */
static const char *dict_value(const char *h, const char *key)
{
    char pat[32];
    snprintf(pat, sizeof pat, "'%s'", key);
    const char *p = strstr(h, pat);
    if (!p) {
        snprintf(pat, sizeof pat, "\"%s\"", key);
        p = strstr(h, pat);
    }
    if (!p)
        return NULL;
    p += strlen(pat);
    while (isspace((unsigned char)*p))
        p++;
    if (*p != ':')
        return NULL;
    p++;
    while (isspace((unsigned char)*p))
        p++;
    return p;
}

static int parse_header(const char *h, npy_array *a, char *err, size_t cap)
{
    const char *d = dict_value(h, "descr"), *f = dict_value(h, "fortran_order"), *s = dict_value(h, "shape");
    if (!d || !f || !s || (*d != '\'' && *d != '"')) {
        snprintf(err, cap, "not a valid .npy header (no descr, fortran_order or shape)");
        return -1;
    }
    char descr[32] = "";
    const char *e = strchr(d + 1, *d);
    if (!e || (size_t)(e - d - 1) >= sizeof descr) {
        snprintf(err, cap, "not a valid .npy header (bad descr)");
        return -1;
    }
    memcpy(descr, d + 1, (size_t)(e - d - 1));
    static const struct {
        const char *descr, *name;
    } wrong[] = {
        {"<f8", "float64"}, {"<i2", "int16"}, {"|i1", "int8"}, {"<u4", "uint32"}, {"<u8", "uint64"},
    };
    if (!strcmp(descr, "<f4"))
        a->dtype = CLF_F32;
    else if (!strcmp(descr, "<i4"))
        a->dtype = CLF_I32;
    else if (!strcmp(descr, "<i8"))
        a->dtype = CLF_I64;
    else if (!strcmp(descr, "|b1") || !strcmp(descr, "|u1"))
        a->dtype = CLF_BOOL;
    else if (!strcmp(descr, "<f2"))
        a->dtype = CLF_F16;
    else if (!strcmp(descr, "<u2")) /* numpy has no bfloat16: its bit patterns as uint16 */
        a->dtype = CLF_BF16;
    else {
        for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++)
            if (!strcmp(descr, wrong[i].descr)) {
                const char *to = descr[1] == 'f' ? "float32" : "int32";
                snprintf(err, cap, "holds %s ('%s'); clfuse reads float32, float16, int32, int64 and bool: save it with "
                         ".astype(numpy.%s)", wrong[i].name, descr, to);
                return -1;
            }
        if (descr[0] == '>')
            snprintf(err, cap, "holds big-endian data ('%s'); save it with .astype('<%s')", descr, descr + 1);
        else
            snprintf(err, cap, "has dtype '%s'; clfuse reads float32 ('<f4'), float16 ('<f2'), bfloat16 as uint16 bit patterns "
                     "('<u2'), int32 ('<i4'), int64 ('<i8') and bool ('|b1')",
                     descr);
        return -1;
    }
    if (!strncmp(f, "True", 4)) {
        snprintf(err, cap, "is in Fortran order; save it with numpy.ascontiguousarray()");
        return -1;
    }
    if (strncmp(f, "False", 5)) {
        snprintf(err, cap, "not a valid .npy header (bad fortran_order)");
        return -1;
    }
    if (*s != '(') {
        snprintf(err, cap, "not a valid .npy header (bad shape)");
        return -1;
    }
    s++;
    a->rank = 0;
    a->numel = 1;
    for (;;) {
        while (isspace((unsigned char)*s))
            s++;
        if (*s == ')')
            break;
        if (!isdigit((unsigned char)*s)) {
            snprintf(err, cap, "not a valid .npy header (bad shape)");
            return -1;
        }
        if (a->rank == CLF_MAX_RANK) {
            snprintf(err, cap, "has more than %d dimensions", CLF_MAX_RANK);
            return -1;
        }
        char *end;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (errno || v < 0) {
            snprintf(err, cap, "not a valid .npy header (bad shape)");
            return -1;
        }
        a->shape[a->rank++] = v;
        if (v && a->numel > SIZE_MAX / 16 / (size_t)v) {
            snprintf(err, cap, "is too large");
            return -1;
        }
        a->numel *= (size_t)v;
        s = end;
        while (isspace((unsigned char)*s))
            s++;
        if (*s == ',')
            s++;
    }
    return 0;
}

int npy_read(const char *path, npy_array *out, char *err, size_t cap)
{
    memset(out, 0, sizeof *out);
    int rc = -1;
    char *header = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, cap, "cannot open: %s", strerror(errno));
        return -1;
    }
    unsigned char pre[12];
    if (fread(pre, 1, 8, f) != 8 || memcmp(pre, "\x93NUMPY", 6)) {
        snprintf(err, cap, "not a .npy file (no \\x93NUMPY magic)");
        goto done;
    }
    size_t hlen;
    if (pre[6] == 1) {
        if (fread(pre + 8, 1, 2, f) != 2)
            goto truncated;
        hlen = (size_t)pre[8] | (size_t)pre[9] << 8;
    } else if (pre[6] == 2 || pre[6] == 3) {
        if (fread(pre + 8, 1, 4, f) != 4)
            goto truncated;
        hlen = (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
        if (hlen > (1u << 24)) {
            snprintf(err, cap, "not a valid .npy file (header of %zu bytes)", hlen);
            goto done;
        }
    } else {
        snprintf(err, cap, "unsupported .npy format version %u.%u", pre[6], pre[7]);
        goto done;
    }
    header = malloc(hlen + 1);
    if (!header) {
        snprintf(err, cap, "out of memory");
        goto done;
    }
    if (fread(header, 1, hlen, f) != hlen)
        goto truncated;
    header[hlen] = 0;
    if (parse_header(header, out, err, cap))
        goto done;
    size_t esize = clf_dtype_size(out->dtype);
    size_t bytes = out->numel * esize;
    out->data = malloc(bytes ? bytes : 1);
    if (!out->data) {
        snprintf(err, cap, "out of memory (%zu bytes)", bytes);
        goto done;
    }
    if (fread(out->data, 1, bytes, f) != bytes)
        goto truncated;
    if (out->dtype == CLF_BOOL) /* '|u1' may hold any byte; bool is 0 or 1 */
        for (size_t i = 0; i < bytes; i++)
            ((unsigned char *)out->data)[i] = ((unsigned char *)out->data)[i] != 0;
    rc = 0;
    goto done;
truncated:
    snprintf(err, cap, "truncated .npy file");
done:
    if (rc)
        npy_free(out);
    free(header);
    fclose(f);
    return rc;
}

int npy_write(const char *path, clf_dtype dtype, int rank, const int64_t *shape, const void *data, char *err,
              size_t cap)
{
    const char *descr = dtype == CLF_F32    ? "<f4"
                        : dtype == CLF_F16  ? "<f2"
                        : dtype == CLF_BF16 ? "<u2"
                        : dtype == CLF_I32  ? "<i4"
                        : dtype == CLF_I64  ? "<i8"
                                            : "|b1";
    char shp[256], dict[512];
    npy_shape_str(rank, shape, shp, sizeof shp);
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shp);
    if (n < 0 || (size_t)n + 12 >= sizeof dict) {
        snprintf(err, cap, "shape too long for the header");
        return -1;
    }
    /* Pad with spaces so that magic + length + dict + '\n' is a multiple of 64. */
    size_t total = 10 + (size_t)n + 1;
    size_t pad = (64 - total % 64) % 64;
    memset(dict + n, ' ', pad);
    dict[(size_t)n + pad] = '\n';
    size_t hlen = (size_t)n + pad + 1;
    size_t numel = 1;
    for (int d = 0; d < rank; d++)
        numel *= (size_t)shape[d];
    size_t bytes = numel * clf_dtype_size(dtype);
    FILE *f = fopen(path, "wb");
    if (!f) {
        snprintf(err, cap, "cannot create: %s", strerror(errno));
        return -1;
    }
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff),
                             (unsigned char)(hlen >> 8)};
    bool ok = fwrite(pre, 1, 10, f) == 10 && fwrite(dict, 1, hlen, f) == hlen &&
              (bytes == 0 || fwrite(data, 1, bytes, f) == bytes);
    if (fclose(f) != 0)
        ok = false;
    if (!ok) {
        snprintf(err, cap, "write failed: %s", strerror(errno));
        return -1;
    }
    return 0;
}

void npy_free(npy_array *a)
{
    if (!a)
        return;
    free(a->data);
    a->data = NULL;
}
