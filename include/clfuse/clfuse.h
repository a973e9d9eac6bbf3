/* libclfuse: torch.compile-style kernel fusion for OpenCL devices.
 * The umbrella header; see graph.h (building graphs), onnx.h (loading
 * ONNX models into graphs) and runtime.h (devices, compiling, running);
 * alloc.h replaces the host allocator. */
#ifndef CLFUSE_CLFUSE_H
#define CLFUSE_CLFUSE_H

#include "export.h"
#include "status.h"
#include "graph.h"
#include "onnx.h"
#include "runtime.h"
#include "reference.h"
#include "alloc.h"

#define CLFUSE_VERSION_MAJOR 0
#define CLFUSE_VERSION_MINOR 1
#define CLFUSE_VERSION_PATCH 0

#ifdef __cplusplus
extern "C" {
#endif

/* "0.1.0": the version of the library actually linked. */
CLF_API const char *clf_version(void);

#ifdef __cplusplus
}
#endif

#endif
