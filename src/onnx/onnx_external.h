/* Tensor data stored beside an ONNX model (TensorProto.data_location =
 * EXTERNAL): the bytes of a file under the model's folder, checked and
 * mapped into memory. */
#ifndef CLFUSE_ONNX_EXTERNAL_H
#define CLFUSE_ONNX_EXTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "clfuse/status.h"
#include "onnx_ast.h"

/* The files one model reads, each opened and mapped once; lives in the
 * model's arena, whose cleanups unmap the files. */
typedef struct clf__onnx_external clf__onnx_external;

/* A new set of files read from base_dir (which must exist). NULL when out
 * of memory. */
clf__onnx_external *clf__onnx_external_create(clf__onnx_arena *arena, const char *base_dir);

/* Points *data at the bytes [offset, offset + bytes) of the file location
 * (relative to the base folder); length, when not negative, is the
 * length the model states, which must be bytes. location must be a
 * relative path without ".." that resolves (symbolic links followed)
 * inside the base folder, to a regular file holding the range. The data
 * stays valid until the arena's cleanups run. On failure returns
 * CLF_ERR_MODEL (or CLF_ERR_IO, CLF_ERR_OUT_OF_MEMORY) and writes
 * "external data 'LOCATION': reason" to err. */
clf_status clf__onnx_external_get(clf__onnx_external *x, const char *location, int64_t offset, int64_t length,
                                  size_t bytes, const void **data, char *err, size_t cap);

#endif
