/* Status codes. Every fallible libclfuse function returns one; CLF_OK is 0
 * and every error is negative. The detail of the last failure (which call,
 * which argument, which shape, the OpenCL build log) is kept on the handle
 * the call was made on: clf_graph_status() and clf_context_last_error(),
 * or, for calls that make no handle when they fail (clf_context_create,
 * clf_onnx_load_file), written to a message buffer in their params. */
#ifndef CLFUSE_STATUS_H
#define CLFUSE_STATUS_H

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(name, value, description) */
#define CLF_STATUS_LIST(X)                                                           \
    X(CLF_OK, 0, "success")                                                          \
    X(CLF_ERR_INVALID_ARGUMENT, -1, "invalid argument")                              \
    X(CLF_ERR_SHAPE, -2, "incompatible or invalid shape")                            \
    X(CLF_ERR_DTYPE, -3, "dtype not accepted by the operation")                      \
    X(CLF_ERR_OUT_OF_MEMORY, -4, "out of host memory")                               \
    X(CLF_ERR_NOT_FOUND, -5, "no such device, input or output")                      \
    X(CLF_ERR_OPENCL, -6, "an OpenCL call failed")                                   \
    X(CLF_ERR_BUILD, -7, "an OpenCL program failed to build")                        \
    X(CLF_ERR_UNSUPPORTED, -8, "not supported by this device or this version")       \
    X(CLF_ERR_GRAPH, -9, "the graph is in an error state")                           \
    X(CLF_ERR_INTERNAL, -10, "internal error (a libclfuse bug)")                     \
    X(CLF_ERR_MODEL, -11, "the model file is malformed or invalid")                  \
    X(CLF_ERR_IO, -12, "a file could not be opened or read")

typedef enum clf_status {
#define CLF_STATUS_ENUM_(name, value, desc) name = value,
    CLF_STATUS_LIST(CLF_STATUS_ENUM_)
#undef CLF_STATUS_ENUM_
} clf_status;

/* "CLF_ERR_SHAPE" for CLF_ERR_SHAPE; "CLF_UNKNOWN_STATUS" for anything else. */
CLF_API const char *clf_status_name(clf_status s);
/* A short sentence describing the status class (not the failure's detail). */
CLF_API const char *clf_status_str(clf_status s);

#ifdef __cplusplus
}
#endif

#endif
