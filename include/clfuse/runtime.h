/* Runtime: OpenCL devices, compiling a graph into an executable, running it.
 *
 * Ownership: a clf_context owns its OpenCL context and queue unless it
 * adopted the caller's (clf_context_from_cl), in which case it retains them
 * and releases its references when destroyed. A clf_executable owns its
 * kernels and device buffers (constants, and one scratch buffer for the
 * intermediates unless the caller supplies it: clf_executable_set_scratch)
 * and holds a reference to its context: destroy every executable before its
 * context. Buffers the caller binds to a run stay the caller's.
 *
 * Thread-safety: a context and its executables may be shared by threads.
 * clf_compile, clf_run, clf_run_host, clf_executable_last_profile and the
 * read-only queries may be called from several threads at once, on one
 * context and on one executable. OpenCL kernel arguments are not
 * thread-safe, so each executable holds a lock from setting its kernels'
 * arguments to enqueueing them: concurrent clf_run calls on one executable
 * are serialized for that short moment and land on the queue one run after
 * another, each run after the previous one (also on an out-of-order queue,
 * since runs share the executable's intermediate buffers). clf_run_host gives
 * each concurrent caller its own staging buffers, so every caller gets its
 * own results. clf_context_last_error is per thread: it reports the calling
 * thread's last failure on that context. Creating and destroying are not
 * concurrent: destroy an executable or a context only when no other thread is
 * using it. Different contexts are independent.
 *
 * Program cache: built programs are cached in memory per context and on disk
 * in $CLFUSE_CACHE_DIR, else $XDG_CACHE_HOME/clfuse, else ~/.cache/clfuse.
 * An entry's key covers the generated source, the build options, the
 * platform's and device's vendor, name and version, the driver version, the
 * address bits and the library's code generator, so another device or a
 * driver upgrade misses instead of loading a stale binary. Entries are
 * written atomically (temporary file, then rename) and checked when read; a
 * corrupt entry or one the driver refuses is removed and rebuilt, and the
 * cache never makes a compile fail. Next to the binaries, the plan and
 * generated sources of each compiled graph are cached (see clf_compile), so
 * that a warm compile neither plans, generates nor builds.
 * clf_context_params.disable_disk_cache or CLFUSE_CACHE=0 turns both off;
 * CLFUSE_LOGS=cache shows hits, misses and why an entry was discarded.
 *
 * Memory: the values that cross kernel boundaries live in one scratch
 * buffer, where values whose lifetimes do not overlap share bytes
 * (clf_plan_stats.peak_intermediate_bytes). Host memory of the library
 * comes from the allocator of alloc.h.
 */
#ifndef CLFUSE_RUNTIME_H
#define CLFUSE_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include "export.h"
#include "graph.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Devices --------------------------------------------------------- */

/* One OpenCL device as libclfuse sees it. index is the position in the
 * list, counted across platforms, and is what CLFUSE_DEVICE=<n> selects. */
typedef struct clf_device_desc {
    char platform_name[128];
    char device_name[128];
    char device_version[128];
    uint64_t global_mem_bytes;
    uint64_t max_alloc_bytes;
    uint32_t index;
    uint32_t compute_units;
    uint32_t base_align; /* CL_DEVICE_MEM_BASE_ADDR_ALIGN in bytes: offsets must be multiples */
    bool is_gpu;
    bool is_cpu;
} clf_device_desc;

/* Fills up to cap entries of out (out may be NULL when cap is 0) and sets
 * *count to the number of devices present. CLF_ERR_NOT_FOUND when there is
 * no OpenCL platform. */
CLF_API clf_status clf_devices_list(clf_device_desc *out, size_t cap, size_t *count);

/* ---- Context --------------------------------------------------------- */

typedef struct clf_context clf_context;

/* Zero means default for every field. */
typedef struct clf_context_params {
    /* Which device: NULL for $CLFUSE_DEVICE, else the first GPU, else the
     * first device. Accepts an index ("1"), "gpu", "cpu", or a substring of
     * the device or platform name (case-insensitive). */
    const char *device;
    /* Create the queue with CL_QUEUE_PROFILING_ENABLE (also switched on by
     * CLFUSE_LOGS=perf). */
    bool profiling;
    /* Do not read or write the on-disk program cache (also turned off by
     * CLFUSE_CACHE=0); programs are still cached in memory. */
    bool disable_disk_cache;
    /* Where the reason for a failure of clf_context_create is written (a
     * NUL-terminated message of at most message_cap bytes); may be NULL. */
    char *message;
    size_t message_cap;
} clf_context_params;

#define clf_context_params(...) (&(const clf_context_params){__VA_ARGS__})

/* Creates a context on the chosen device; *out is NULL on failure and the
 * reason goes to params->message when given. */
CLF_API clf_status clf_context_create(const clf_context_params *params, clf_context **out);
/* Adopts the caller's OpenCL objects (retained, not copied). queue must
 * belong to context and device. The disk cache follows the environment. */
CLF_API clf_status clf_context_from_cl(cl_context context, cl_device_id device,
                                       cl_command_queue queue, clf_context **out);
/* Releases the context and sets *ctx to NULL; accepts NULL. */
CLF_API void clf_context_destroy(clf_context **ctx);
/* The detail of the calling thread's last failure on this context or its
 * executables ("" if none): the OpenCL error's name and, for builds, the
 * build log. Valid until the thread's next call on the context. */
CLF_API const char *clf_context_last_error(const clf_context *ctx);
/* The context's device, queue and OpenCL context (not retained for the
 * caller). */
CLF_API clf_status clf_context_device(const clf_context *ctx, clf_device_desc *out);
CLF_API cl_command_queue clf_context_queue(const clf_context *ctx);
CLF_API cl_context clf_context_cl(const clf_context *ctx);
/* Whether the context's queue has profiling and the device's event
 * timestamps measure time: a context with profiling times a 16 MiB fill
 * when it is made, and some drivers (rusticl's llvmpipe) give 0 to 3 ns for
 * any command. Where this is false, clf_executable_last_profile refuses
 * (CLF_ERR_UNSUPPORTED, saying why) and figures must come from the host's
 * clock. */
CLF_API bool clf_context_timestamps_real(const clf_context *ctx);

/* ---- Compiling --------------------------------------------------------- */

typedef struct clf_executable clf_executable;

/* Zero means default for every field. */
/* Which family of kernel templates to use: the device's own (AUTO), the
 * CPU form (a work-item per row, serial loops) or the GPU form (work-groups
 * per row, tree reductions in local memory). Forcing one is for testing and
 * tuning; both are correct on every device. */
typedef enum clf_kernel_style {
    CLF_KERNEL_STYLE_AUTO = 0,
    CLF_KERNEL_STYLE_CPU = 1,
    CLF_KERNEL_STYLE_GPU = 2,
} clf_kernel_style;

typedef struct clf_compile_params {
    /* One kernel per op, for comparison and debugging. */
    bool disable_fusion;
    clf_kernel_style kernel_style;
    /* GEMM kernels: time candidate tile configurations on the device at
     * compile time and keep the fastest in the on-disk cache, keyed by the
     * device and the problem class (extents rounded up to powers of two,
     * batch, operand layouts); later compiles of that class read it. Off:
     * the device type's defaults. CLFUSE_AUTOTUNE=1 turns it on for every
     * compile. */
    bool autotune;
    /* The caller supplies the scratch buffer that holds the intermediates
     * (clf_executable_set_scratch) instead of the executable allocating
     * its own; runs fail until it has one. */
    bool external_scratch;
    /* GEMMs of f32 operands may run on NVIDIA's tensor cores (sm_80 and
     * later) as TF32, as PyTorch's allow_tf32: each operand rounded to 10
     * mantissa bits (to nearest, ties away), products summed in f32, so a
     * result's relative error grows to about 2^-11 times the sum of
     * |a||b| over K instead of f32's 2^-24. Off by default;
     * CLFUSE_TF32=1 turns it on for every compile. Devices without tensor
     * cores ignore it. */
    bool allow_tf32;
} clf_compile_params;

#define clf_compile_params(...) (&(const clf_compile_params){__VA_ARGS__})

/* Plans, generates and builds the graph for the context's device. The
 * graph may be destroyed afterwards. A graph in an error state gives
 * CLF_ERR_GRAPH with its message; a build failure gives CLF_ERR_BUILD with
 * the build log in clf_context_last_error().
 *
 * With the disk cache on, the plan and the generated sources are cached
 * too (next to the program binaries): a compile that finds its entry skips
 * planning and code generation, and with the binaries cached it builds
 * nothing. That entry's key covers the whole graph (every node's op,
 * attributes, dtype and shape, the bytes of tensor constants, the inputs and
 * outputs with their names), the compile params, the device (as the
 * program cache's key) and the library's own code, so any change misses. */
CLF_API clf_status clf_compile(clf_context *ctx, const clf_graph *g, const clf_compile_params *params,
                               clf_executable **out);
/* Frees kernels and buffers and sets *exe to NULL; accepts NULL. */
CLF_API void clf_executable_destroy(clf_executable **exe);

/* What the plan does, with fusion as compiled and with fusion off. Reads and
 * writes count tensors moved by a kernel (a tensor read by a kernel counts
 * once however its elements are indexed); bytes are those tensors' sizes,
 * but a cache write (clf_cache_write) counts the new entries it writes. */
typedef struct clf_plan_stats {
    uint64_t kernels;
    uint64_t launches;        /* kernels with work to do (zero-size ones are skipped) */
    uint64_t tensor_reads;
    uint64_t tensor_writes;
    uint64_t bytes_read;
    uint64_t bytes_written;
    uint64_t unfused_kernels;
    uint64_t unfused_launches;
    uint64_t unfused_tensor_reads;
    uint64_t unfused_tensor_writes;
    uint64_t unfused_bytes_read;
    uint64_t unfused_bytes_written;
    /* Memory planning: the values that cross kernel boundaries (and split
     * reductions' partial results), their total size, and the scratch they
     * are placed in, where values whose lifetimes (first kernel writing to
     * last kernel reading) do not overlap share bytes. Offsets in the
     * scratch are multiples of the device's CL_DEVICE_MEM_BASE_ADDR_ALIGN,
     * so peak_intermediate_bytes includes that padding. */
    uint64_t intermediate_buffers;
    uint64_t intermediate_bytes;
    uint64_t peak_intermediate_bytes;
} clf_plan_stats;

CLF_API clf_status clf_executable_stats(const clf_executable *exe, clf_plan_stats *out);

/* The bytes of scratch memory the executable's intermediates need
 * (clf_plan_stats.peak_intermediate_bytes); 0 when it has none. */
CLF_API clf_status clf_executable_scratch_size(const clf_executable *exe, size_t *bytes);
/* Places the intermediates in buffer, from byte offset on (the kernels get
 * buffer and each intermediate's offset in it: no sub-buffers are made, so
 * several executables may share one arena); the executable retains buffer
 * and no longer uses the scratch it had (its own is freed). buffer must
 * belong to the executable's context, hold offset +
 * clf_executable_scratch_size() bytes, and offset must be a multiple of the
 * device's CL_DEVICE_MEM_BASE_ADDR_ALIGN (in bytes); otherwise
 * CLF_ERR_INVALID_ARGUMENT with the sizes in the message. A buffer that is
 * itself a sub-buffer is used as it is. Runs
 * already enqueued keep the scratch they were given; the caller must not
 * use those bytes for anything else while a run may be in flight. NULL
 * (with offset 0) is accepted when the size is 0. Serialized with runs. */
CLF_API clf_status clf_executable_set_scratch(clf_executable *exe, cl_mem buffer, size_t offset);

/* Kernels of the executable in launch order: its name, the ops it fused
 * (space separated) and its OpenCL C source. Strings live as long as exe. */
CLF_API size_t clf_executable_kernel_count(const clf_executable *exe);
CLF_API const char *clf_executable_kernel_name(const clf_executable *exe, size_t i);
CLF_API const char *clf_executable_kernel_ops(const clf_executable *exe, size_t i);
CLF_API const char *clf_executable_kernel_source(const clf_executable *exe, size_t i);
/* The graph nodes kernel i computes, as clf_tensor.node values of the graph
 * it was compiled from, ascending; *count (not NULL) receives their number.
 * Leaves (inputs, constants) are not listed; a value inlined into several
 * kernels is listed by each. NULL with *count 0 when i is out of range. The
 * array lives as long as exe. For tools that draw or explain the plan. */
CLF_API const uint32_t *clf_executable_kernel_nodes(const clf_executable *exe, size_t i, size_t *count);

/* ---- Running ----------------------------------------------------------- */

/* Binds a graph input or output by name to a device buffer (clf_run); see
 * clf_host_binding in graph.h for host memory (clf_run_host). A buffer must
 * hold at least the tensor's bytes; zero-size tensors may be bound to NULL. */
typedef struct clf_buffer_binding {
    const char *name;
    cl_mem buffer;
} clf_buffer_binding;

/* Binds a graph input or output by name to a device buffer from byte
 * offset on (clf_enqueue). The buffer must hold offset + the tensor's
 * bytes, and a non-zero offset must be a multiple of the device's
 * CL_DEVICE_MEM_BASE_ADDR_ALIGN in bytes (128 on PoCL; see
 * clf_device_desc.base_align): the kernels see the tensor through a
 * sub-buffer (clCreateSubBuffer), so the generated code is the same for
 * every offset, and an offset that is not aligned is refused with
 * CLF_ERR_INVALID_ARGUMENT naming the tensor. A buffer that is itself a
 * sub-buffer works (its own offset is added). Zero-size tensors may be
 * bound to NULL. */
typedef struct clf_buffer_view {
    const char *name;
    cl_mem buffer;
    size_t offset;
} clf_buffer_view;

/* Copies inputs in, runs, copies outputs out; returns when the outputs are
 * written. Every input and output must be bound exactly once, to non-NULL
 * data unless the tensor is empty. A tensor larger than the device's
 * CL_DEVICE_MAX_MEM_ALLOC_SIZE is refused (CLF_ERR_UNSUPPORTED) before
 * anything is enqueued. */
CLF_API clf_status clf_run_host(clf_executable *exe, size_t ninputs, const clf_host_binding *inputs,
                                size_t noutputs, const clf_host_binding *outputs);
/* Enqueues the kernels on the context's queue after the wait list and
 * returns without waiting (no clFinish, no blocking call on this path);
 * *done (if not NULL) receives an event that completes when every output
 * is written (release it with clReleaseEvent). Outputs may not alias
 * inputs or each other (also through offsets or sub-buffers of one
 * buffer). Everything is checked before anything is enqueued. */
CLF_API clf_status clf_run(clf_executable *exe, size_t ninputs, const clf_buffer_binding *inputs,
                           size_t noutputs, const clf_buffer_binding *outputs, cl_uint nwait,
                           const cl_event *wait, cl_event *done);
/* clf_run with byte offsets (clf_buffer_view) on the caller's queue (NULL:
 * the context's), which must belong to the context's OpenCL context and
 * device. Runs of one executable are
 * ordered after each other through events (they share the intermediates),
 * also across queues. */
CLF_API clf_status clf_enqueue(clf_executable *exe, cl_command_queue queue, size_t ninputs,
                               const clf_buffer_view *inputs, size_t noutputs, const clf_buffer_view *outputs,
                               cl_uint nwait, const cl_event *wait, cl_event *done);

/* Runs with the inputs' shapes, which an executable of a graph with
 * symbolic dimensions (clf_dim) must be given: input_shapes[i] holds the
 * extents of inputs[i] (its declared rank of them; NULL for an input
 * without symbolic axes). The sizes they give must agree between inputs,
 * lie within each dimension's bounds and leave the fixed extents as
 * declared; otherwise CLF_ERR_SHAPE (or CLF_ERR_INVALID_ARGUMENT for a
 * size no input gives) naming the input, the axis and the dimension, and
 * nothing is enqueued. Outputs take the sizes that follow; their buffers
 * must hold that many bytes. A dimension no input's shape carries (a KV
 * cache's length L, with the caches laid out for their capacity) is given
 * by a binding named after it, with NULL data or buffer and its size in
 * input_shapes[i][0]; such a binding is allowed for any dimension.
 *
 * KV caches (clf_cache_write): a cache write's output is bound to the same
 * memory as its cache input (clf_enqueue_shaped: the same buffer and
 * offset, else CLF_ERR_INVALID_ARGUMENT naming both); its kernel writes the
 * new entries there and nothing else, so a decode step moves S positions
 * of the cache, not the cache. A host run copies: the input's array is
 * read, the output's array receives the whole updated cache.
 *
 * The first run at new sizes specialises the graph to them (plans,
 * generates and instantiates, on the calling thread, under the
 * executable's lock). It builds no program where its kernels take a form
 * seen before: the literals that change with the sizes (extents, counts)
 * are kernel arguments of programs clf_compile built, after generating the
 * kernels at a few probe sizes; a kernel whose form itself changes (a
 * GEMM whose rows stop filling whole tiles, size 1) is a variant with a
 * build of its own, also made at compile time where a probe size showed it
 * (CLFUSE_LOGS=cache says which). Specialisations are kept for later runs
 * (the 16 most recently used) and share the executable's constants and
 * one scratch buffer, as large as the largest one's intermediates (grown
 * by half at least when a run needs more, never shrunk). Runs of one
 * executable are ordered after each other across specialisations and
 * queues as clf_run's are. clf_run, clf_run_host
 * and clf_enqueue refuse such an executable; on an executable without
 * symbolic dimensions these take the declared shapes, checked. The
 * queries (kernels, stats, scratch size) describe the executable at the
 * dimensions' stand-in sizes; clf_executable_input and _output report -1
 * for a symbolic extent, clf_executable_last_profile the last run's
 * specialisation. */
CLF_API clf_status clf_run_host_shaped(clf_executable *exe, size_t ninputs, const clf_host_binding *inputs,
                                       const int64_t *const *input_shapes, size_t noutputs,
                                       const clf_host_binding *outputs);
CLF_API clf_status clf_enqueue_shaped(clf_executable *exe, cl_command_queue queue, size_t ninputs,
                                      const clf_buffer_view *inputs, const int64_t *const *input_shapes,
                                      size_t noutputs, const clf_buffer_view *outputs, cl_uint nwait,
                                      const cl_event *wait, cl_event *done);

/* With a profiling context: device time of each kernel of the last run (of
 * any thread), in launch order (start to end, ns), and the span from the
 * first kernel's start to the last one's end. Waits for the last run. CLF_ERR_UNSUPPORTED
 * without profiling or before any run. */
typedef struct clf_run_profile {
    uint64_t span_ns;
    uint64_t kernel_ns_total;
    size_t kernels;
} clf_run_profile;

CLF_API clf_status clf_executable_last_profile(clf_executable *exe, clf_run_profile *out,
                                               uint64_t *kernel_ns, size_t cap);

/* ---- Introspection ------------------------------------------------------ */

CLF_API size_t clf_executable_input_count(const clf_executable *exe);
CLF_API size_t clf_executable_output_count(const clf_executable *exe);
/* Name, dtype and shape of input/output i; CLF_ERR_NOT_FOUND out of range. */
CLF_API clf_status clf_executable_input(const clf_executable *exe, size_t i, const char **name,
                                        clf_dtype *dtype, int *rank, int64_t *shape);
CLF_API clf_status clf_executable_output(const clf_executable *exe, size_t i, const char **name,
                                         clf_dtype *dtype, int *rank, int64_t *shape);

#ifdef __cplusplus
}
#endif

#endif
