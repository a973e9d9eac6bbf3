/* A kernel's argument values as last set (kernel_args.c): a run sets only
 * the arguments that changed since. On NVIDIA's OpenCL a small model's run
 * is the host's enqueueing, and a run of the tiny fixtures set 10-20
 * arguments a kernel of which only the caller's buffers change. */
#ifndef CLFUSE_KERNEL_ARGS_H
#define CLFUSE_KERNEL_ARGS_H

#include <CL/cl.h>
#include <stdint.h>

/* The values one cl_kernel's arguments were last given. owner says whose
 * (clf__kernel_args_owner: an executable and its scratch and state
 * bindings); a setter of another owner forgets every value first, so that
 * a cl_mem handle reused for a new buffer is never taken for the old one.
 * Guarded by whatever guards setting the kernel's arguments. */
typedef struct clf__kernel_args {
    uint64_t owner; /* 0: none */
    cl_uint nargs;
    struct clf__arg_value {
        uint8_t size; /* 0: not known */
        unsigned char bytes[15];
    } *values;
} clf__kernel_args;

/* A value no other owner had or will have (process-wide). */
uint64_t clf__kernel_args_owner(void);

/* Sets argument index of kern to size bytes at value unless m (may be NULL:
 * always set) holds that value for owner. Values of more than 15 bytes are
 * always set. */
cl_int clf__kernel_arg(clf__kernel_args *m, uint64_t owner, cl_kernel kern, cl_uint index, size_t size,
                       const void *value);

/* Sets argument index of kern without remembering it (a value that may
 * name a released object next time: the caller's buffers). */
cl_int clf__kernel_arg_once(clf__kernel_args *m, cl_kernel kern, cl_uint index, size_t size, const void *value);

/* Forgets every value (after the arguments were set around m). */
void clf__kernel_args_forget(clf__kernel_args *m);

void clf__kernel_args_free(clf__kernel_args *m);

#endif
