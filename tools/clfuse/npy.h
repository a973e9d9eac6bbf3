/* NumPy .npy files (format versions 1.0, 2.0 and 3.0): little-endian
 * '<f4', '<i4', '|b1' and '|u1' (read as bool) in C order. Fortran order,
 * other dtypes and big-endian data are refused with a message saying how to
 * convert them. */
#ifndef CLFUSE_TOOL_NPY_H
#define CLFUSE_TOOL_NPY_H

#include <stddef.h>
#include <stdint.h>

#include <clfuse/graph.h>

typedef struct npy_array {
    clf_dtype dtype;
    int rank;
    int64_t shape[CLF_MAX_RANK];
    size_t numel;
    void *data; /* numel elements of dtype, malloc'd; never NULL */
} npy_array;

/* Reads path into *out. Returns 0, or -1 with a one-line reason in err
 * (which does not repeat the path). */
int npy_read(const char *path, npy_array *out, char *err, size_t cap);
/* Writes a version 1.0 file. Returns 0, or -1 with a reason in err. */
int npy_write(const char *path, clf_dtype dtype, int rank, const int64_t *shape, const void *data, char *err,
              size_t cap);
void npy_free(npy_array *a);

/* "(3, 4)" into buf; returns buf. */
char *npy_shape_str(int rank, const int64_t *shape, char *buf, size_t cap);

#endif
