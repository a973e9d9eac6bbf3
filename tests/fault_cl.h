/* OpenCL fault injection for tests: libclfuse_fault.so defines the OpenCL
 * entry points below, forwards them to the real ICD loader (dlsym with
 * RTLD_NEXT), and makes a chosen call fail. A test executable linked with
 * it ahead of OpenCL gets its calls, and libclfuse's, through it. It also
 * counts calls and the OpenCL objects alive (created or retained, minus
 * released), so that tests can check that a failure leaks nothing. */
#ifndef CLFUSE_FAULT_CL_H
#define CLFUSE_FAULT_CL_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

/* The functions that can fail, by name: clCreateBuffer, clCreateSubBuffer,
 * clCreateProgramWithSource, clCreateProgramWithBinary, clBuildProgram,
 * clCreateKernel, clEnqueueNDRangeKernel, clEnqueueWriteBuffer,
 * clEnqueueReadBuffer, clEnqueueMarkerWithWaitList. */
extern const char *const clf_fault_functions[];
extern const unsigned clf_fault_nfunctions;

/* The nth call of fn from now on (1: the next one) returns err without
 * reaching the driver (creators return NULL and set *errcode_ret); later
 * calls go through. Returns 0, or -1 for a name it does not wrap. */
int clf_fault_arm(const char *fn, unsigned long nth, cl_int err);
/* Disarms everything. */
void clf_fault_clear(void);
/* How many times fn was called since the process started (also clFinish
 * and clWaitForEvents, which are counted but never fail); how many
 * injected failures happened. */
unsigned long clf_fault_calls(const char *fn);
unsigned long clf_fault_injected(void);
/* OpenCL objects alive through this process's calls: "mem", "kernel",
 * "program", "event". */
long clf_fault_live(const char *kind);

/* Caps what clGetKernelWorkGroupInfo(CL_KERNEL_WORK_GROUP_SIZE) reports for
 * every kernel at cap (0: no cap) and refuses larger launches with
 * CL_OUT_OF_RESOURCES, as a GPU does for a kernel whose registers allow
 * only smaller work-groups. */
void clf_fault_cap_work_group(size_t cap);
/* CL_KERNEL_WORK_GROUP_SIZE reports at most cap (0: as the device says),
 * but launches of larger work-groups still run: a driver whose answer is
 * pessimistic (NVIDIA's, for kernels of 56 registers and more). */
void clf_fault_understate_work_group(size_t cap);
/* Non-zero: every profiling timestamp (clGetEventProfilingInfo) reads the
 * same value, as on a driver that does not really provide them (rusticl's
 * llvmpipe). */
void clf_fault_fake_timestamps(int on);

#endif
