/* Internals shared by the runtime's files: the context and executable
 * structures, error recording and the program caches (memory and disk). */
#ifndef CLFUSE_RUNTIME_INTERNAL_H
#define CLFUSE_RUNTIME_INTERNAL_H

#include <pthread.h>

#include "clfuse/runtime.h"
#include "codegen/codegen.h"
#include "graph/graph_merge_products.h"
#include "planner/planner.h"
#include "util/strbuf.h"

typedef struct clf__cached_program {
    uint64_t hash;
    char *source;
    char *options;
    cl_program program;
} clf__cached_program;

/* What the program caches did on one context, for tests and logs. */
typedef struct clf__program_counts {
    uint64_t memory_hits;
    uint64_t disk_hits;
    uint64_t source_builds; /* clBuildProgram on source: what a warm cache avoids */
    uint64_t disk_stores;
    uint64_t disk_discards; /* corrupt, truncated, stale or rejected entries removed */
    /* The plan and source cache. */
    uint64_t plans_built; /* clf_compile calls that ran the planner and codegen */
    uint64_t plan_hits;
    uint64_t plan_stores;
    uint64_t plan_discards;
} clf__program_counts;

struct clf_context {
    cl_platform_id platform;
    cl_device_id device;
    cl_context cl;
    cl_command_queue queue;
    clf_device_desc desc;
    bool profiling;
    /* The queue has profiling but the device's event timestamps are not
     * real (check_profiling_clock in context.c): 0 to 3 ns for any command
     * on rusticl's llvmpipe. clf_executable_last_profile refuses, naming it. */
    bool profiling_fake;
    char profiling_why[384];
    size_t max_local;
    bool fp64; /* cl_khr_fp64 */
    bool nvidia_gpu; /* CL_DEVICE_VENDOR names NVIDIA on a GPU: inline PTX warp shuffles build */
    bool nvidia_sm80; /* an NVIDIA GPU of compute capability 8.0 or later: mma.sync m16n8k16 */
    uint32_t quirks; /* the driver's clf__quirk bits (driver_quirks.h) */
    /* A compile builds its distinct sources as one program (program_merge.c):
     * PoCL, whose builds cost ~95 ms a program whatever it holds;
     * CLFUSE_ONE_PROGRAM=0 or 1 decides instead. */
    bool one_program;
    uint64_t base_align; /* CL_DEVICE_MEM_BASE_ADDR_ALIGN in bytes: sub-buffer and scratch region offsets */
    uint64_t id; /* unique in the process: names this context's per-thread errors */
    pthread_mutex_t lock; /* guards programs and counts */
    bool lock_ready;
    clf__cached_program *programs;
    size_t nprograms, cap_programs;
    clf__program_counts counts;
    char *cache_dir;        /* on-disk program cache; NULL when off */
    char *cache_device_key; /* the key fields of the platform, device and library */
    bool plan_cache_off;    /* the plan cache alone is skipped (tests) */
};

typedef struct clf__io {
    char *name;
    clf_dtype dtype;
    int rank;
    int64_t shape[CLF_MAX_RANK];
    uint64_t bytes;
    uint32_t buffer; /* plan buffer id */
    /* An output that is a cache write (clf_cache_write): 1 + the index of
     * the input it is written in place in, else 0. */
    uint32_t written_into;
    /* An input: an output is written in it in place (its cache). */
    bool written;
} clf__io;

/* Sets the in-place marks of e's inputs and outputs (and of its plan
 * buffers) from g, the graph it was compiled or loaded for. */
void clf__exe_mark_in_place(clf_executable *e, const clf_graph *g);

typedef struct clf__exe_kernel {
    char *name, *ops; /* name as shown: the entry and the kernel's index */
    const char *source; /* a text (util/text.h), shared with the kernel memo and the lift */
    char *entry;      /* the kernel function in source (kernels of one source share it) */
    char *final_name; /* a split reduction's combining kernel (an entry), else NULL */
    cl_kernel kernel;
    uint32_t *params;
    uint32_t nparams;
    uint32_t *nodes; /* the plan kernel's ops, for clf_executable_kernel_nodes */
    uint32_t nnodes;
    bool wide_index;
    uint64_t numel;
    /* Values of the literals lifted out of its source (source_lift.h),
     * passed right after the CLF_PARAMS buffers; none for a plain
     * executable. */
    struct clf__lift_arg *lift;
    uint32_t nlift;
    size_t global, local;
    /* A split reduction: a second kernel combines the first one's partial
     * results (partial_bytes at partial_offset of the executable's scratch,
     * passed as the scratch buffer and that offset). */
    cl_kernel final_kernel;
    size_t final_global, final_local;
    uint64_t partial_bytes, partial_offset;
    /* State kept between the kernel's work-groups (codegen.h's
     * state_bytes): its own region of the executable's state buffer, from
     * uint state_at on (an argument: no sub-buffer), zeroed when made.
     * Launches of one executable never overlap (run.c), so one region
     * serves every run. */
    uint64_t state_bytes;
    uint32_t state_at;
} clf__exe_kernel;

/* A set of device buffers for one clf_run_host call: per plan buffer, its
 * input or output copy (else NULL). Sets are pooled on the executable so
 * that concurrent host runs do not share them. */
typedef struct clf__staging {
    cl_mem *mem;
    struct clf__staging *next;
} clf__staging;

/* Constant buffers shared by an executable's specialisations (dynamic.c):
 * by the host address of the graph's data they were made from. */
typedef struct clf__const_pool clf__const_pool;
typedef struct clf__lift_table clf__lift_table;

/* What a specialisation of a graph with symbolic dimensions shares with
 * the others (dynamic.c): constant buffers, programs through the lift
 * table, generated code (the kernel memo), and scratch (the executable is
 * made without one, as with
 * external_scratch; dynamic.c binds the shared one before each run).
 * sources_only: lower and note the kernels' sources in the lift table,
 * build nothing and make no executable (a probe at other sizes); as_is:
 * note them as worth building as they are. */
typedef struct clf__spec_share {
    clf__const_pool *pool;
    clf__lift_table *lift;
    clf__kernel_memo *memo; /* the code generated for kernels of the same key */
    clf__merge_memo *merges; /* the merged products' concatenated weights */
    bool sources_only, as_is;
    /* The executable is the graph's own (its stand-in, whose statistics
     * clf_executable_stats gives): plan it unfused too, for them. */
    bool stats;
} clf__spec_share;

struct clf_executable {
    clf_context *ctx;
    /* A graph with symbolic dimensions (dynamic.c): this executable is its
     * specialisation to the stand-in sizes, and dyn holds the graph and
     * the specialisations to the sizes runs gave; NULL otherwise. */
    struct clf__dyn *dyn;
    /* Where constants come from and go (a specialisation's): NULL, each
     * its own buffer. */
    clf__const_pool *pool;
    /* Where its programs come from (a specialisation's): NULL, its own
     * sources' builds. */
    clf__lift_table *lift;
    clf__io *inputs, *outputs;
    size_t ninputs, noutputs;
    uint32_t nbuffers;
    clf__plan_buffer *buffers; /* the plan's buffer table */
    cl_mem *owned;             /* per buffer: constants (else NULL) */
    /* Memory plan: intermediates and split reductions' partial results live
     * at offsets[b] / partial_offset in one scratch allocation of
     * scratch_bytes, from scratch_at bytes into buffer scratch on; kernels
     * get scratch and each region's offset (in elements of elem_bytes[b]
     * bytes for an intermediate), no sub-buffers. scratch is the
     * executable's own, or the caller's (retained) with external_scratch;
     * scratch_ready once it has one. */
    uint64_t *offsets;
    uint8_t *elem_bytes;
    uint64_t scratch_bytes, scratch_at;
    bool external_scratch;
    bool scratch_ready;
    /* Set by instantiation when a built kernel allows smaller work-groups
     * than its launch (CL_KERNEL_WORK_GROUP_SIZE: registers per work-item
     * on GPUs): the largest that every such kernel allows. */
    size_t fit_local;
    unsigned build_threads; /* programs got at once (CLFUSE_BUILD_THREADS) */
    /* Set by instantiation when the driver refused (CL_BUILD_PROGRAM_FAILURE)
     * a kernel written with inline PTX: the forms it used (CLF__PTX_*,
     * warp shuffles, tensor cores); clf_compile lowers again without them. */
    unsigned ptx_refused;
    /* The kernels' own state (clf__exe_kernel.state_at), state_bytes in
     * all: one zeroed allocation, made at instantiation; the executables
     * of a graph with symbolic sizes share one (dynamic.c's share_state,
     * set before each run), so a step at a new length allocates none. */
    cl_mem state;
    uint64_t state_bytes;
    cl_mem scratch;
    clf__exe_kernel *kernels;
    size_t nkernels;
    clf_plan_stats stats;
    /* Guards the kernels' arguments from setting them to enqueueing, the
     * fields below and the staging pool. */
    pthread_mutex_t lock;
    bool lock_ready;
    clf__staging *staging_free; /* clf_run_host buffer sets not in use */
    cl_event *events; /* per kernel: events of the last run (NULL when skipped) */
    cl_event *starts; /* per kernel: a split reduction's first launch in the last run */
    cl_event last;    /* the last run's completion: the next run waits for it */
    bool ran;
};

/* Sets a CLF_PARAMS buffer argument of kern at *a and moves *a past it:
 * mem, then for a buffer in the scratch (clf__plan_buffer_in_scratch) its
 * offset at in elements (run.c). */
cl_int clf__set_buffer_arg(cl_kernel kern, cl_uint *a, const clf__plan_buffer *B, cl_mem mem, cl_ulong at);

/* Compiles a graph without symbolic dimensions (clf_compile's work), as a
 * specialisation sharing what share gives (NULL: a plain executable). */
clf_status clf__compile_graph(clf_context *ctx, const clf_graph *g, const clf_compile_params *params,
                              const clf__spec_share *share, clf_executable **out);
/* The runs without the symbolic-dimension check (run.c). */
clf_status clf__run_host(clf_executable *e, size_t ninputs, const clf_host_binding *inputs, size_t noutputs,
                         const clf_host_binding *outputs);
clf_status clf__enqueue(clf_executable *e, cl_command_queue queue, size_t ninputs, const clf_buffer_view *inputs,
                        size_t noutputs, const clf_buffer_view *outputs, cl_uint nwait, const cl_event *wait,
                        cl_event *done);

/* dynamic.c: executables of graphs with symbolic dimensions. */
clf_status clf__dyn_compile(clf_context *ctx, const clf_graph *g, const clf_compile_params *params,
                            clf_executable **out);
void clf__dyn_destroy(clf_executable *e);
/* The error of a run without shapes on such an executable. */
clf_status clf__dyn_refuse(clf_executable *e, const char *call);
/* Writes -1 over the symbolic extents of input (output) i's shape. */
void clf__dyn_mark_symbolic(const clf_executable *e, bool output, size_t i, int64_t *shape);
/* The specialisation that ran last (e itself before any run). */
clf_executable *clf__dyn_last(clf_executable *e);
/* A constant buffer of the pool for data of bytes (retained for the
 * caller), or NULL; and adding one made for it. */
cl_mem clf__pool_find(clf__const_pool *pool, const void *data, uint64_t bytes);
void clf__pool_add(clf__const_pool *pool, const void *data, uint64_t bytes, cl_mem mem);

/* Records the last failure on ctx for the calling thread and returns
 * status. Each thread sees its own last failure on each context. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
clf_status clf__ctx_fail(clf_context *ctx, clf_status status, const char *fmt, ...);
void clf__ctx_clear_error(clf_context *ctx);
const char *clf__cl_error_name(cl_int err);
/* The status an OpenCL error maps to: CLF_ERR_OUT_OF_MEMORY for host and
 * device allocation failures, CLF_ERR_BUILD for build failures and rejected
 * binaries, CLF_ERR_OPENCL for the rest. */
clf_status clf__cl_status(cl_int err);

/* Builds source for the context's device or returns the cached program
 * (retained for the caller). A build failure records the build log, and
 * clBuildProgram's error in *build_err when build_err is not NULL
 * (CL_SUCCESS otherwise). */
clf_status clf__program_get(clf_context *ctx, const char *source, const char *options,
                            cl_program *out, cl_int *build_err);
/* clf__program_get, and *built: whether this call built it from source. */
clf_status clf__program_get_built(clf_context *ctx, const char *source, const char *options, cl_program *out,
                                  cl_int *build_err, bool *built);
void clf__program_cache_clear(clf_context *ctx);
void clf__program_cache_counts(clf_context *ctx, clf__program_counts *out);

/* On-disk program cache (program_cache_disk.c). None of these fails a
 * compile: an I/O error, a corrupt entry or a binary the driver refuses is
 * logged under CLFUSE_LOGS=cache and the caller builds from source.
 *
 * Sets ctx->cache_dir ($CLFUSE_CACHE_DIR, else $XDG_CACHE_HOME/clfuse, else
 * ~/.cache/clfuse; NULL when disabled or CLFUSE_CACHE=0) and the device part
 * of the key. */
void clf__disk_cache_init(clf_context *ctx, bool disable);
void clf__disk_cache_free(clf_context *ctx);
/* A built program for source and options from the cache, or NULL. Bad
 * entries are removed. */
cl_program clf__disk_cache_load(clf_context *ctx, const char *source, const char *options);
/* Writes prog's binary for ctx's device (temporary file, then rename). */
void clf__disk_cache_store(clf_context *ctx, const char *source, const char *options, cl_program prog);
/* The entry's path for source and options (malloc'd; NULL when off), for
 * tests. */
char *clf__disk_cache_path(const clf_context *ctx, const char *source, const char *options);

/* The plan and source cache (plan_cache.c): a compiled graph's lowered
 * executable (buffer table, memory plan, kernels' names, sources and launch
 * geometry, statistics), so that a warm compile skips planning and codegen.
 *
 * The key text for g compiled with params for target on ctx's device;
 * NULL when the disk cache is off (or out of memory). */
char *clf__plan_cache_key(const clf_context *ctx, const clf_graph *g, const clf_compile_params *params,
                          const clf__codegen_target *target);
/* Fills e's lowered fields from the entry for key; false on a miss (bad
 * entries are removed). e must be fresh (no lowered fields set). */
bool clf__plan_cache_load(clf_context *ctx, const char *key, const clf_graph *g, clf_executable *e);
void clf__plan_cache_store(clf_context *ctx, const char *key, const clf_executable *e);
/* The entry's path for key (clf__malloc'd), for tests. */
char *clf__plan_cache_path(const clf_context *ctx, const char *key);

/* The codegen target of a compile on ctx: the device's facts and the
 * kernel style params force (executable.c). */
void clf__compile_target(const clf_context *ctx, const clf_compile_params *params,
                         struct clf__codegen_target *out);

/* Times GEMM kernel k of plan under candidate tilings (autotune.c), or
 * reads the winner kept on disk for its device and problem class; true
 * with *out set when one was found. */
struct clf__codegen_target;
struct clf__gemm_config;
bool clf__gemm_autotune(clf_context *ctx, const clf_graph *g, const clf__plan *plan, uint32_t k,
                        const struct clf__codegen_target *target, struct clf__gemm_config *out);

/* Reads a tiling written "tm,tn,tk,wm,wn", with ",mma" after a tensor-core
 * one (CLFUSE_GEMM_TILE, the tuner's entries); false if text is not one. */
bool clf__gemm_config_parse(const char *text, size_t len, struct clf__gemm_config *out);

/* Frees the executable's pool of clf_run_host staging buffers. */
void clf__staging_free_all(clf_executable *e);

/* Fills desc from an OpenCL device. */
void clf__device_describe(cl_platform_id platform, cl_device_id device, uint32_t index,
                          clf_device_desc *desc);
/* Chooses a device by selector (see clf_context_params.device). */
clf_status clf__device_select(const char *selector, cl_platform_id *platform, cl_device_id *device,
                              uint32_t *index, char *msg, size_t cap);

/* A new buffer of bytes zeroes (*out), or the OpenCL error. */
cl_int clf__zeroed_buffer(clf_context *ctx, uint64_t bytes, cl_mem *out);

/* A scratch buffer of *bytes, lowered to the device's largest allocation,
 * for intermediates that need `need` (refused, with call in the message,
 * when no allocation can hold them). */
clf_status clf__scratch_buffer(clf_context *ctx, uint64_t need, uint64_t *bytes, const char *call, cl_mem *out);
/* Places e's intermediates in buffer from offset (at least
 * e->scratch_bytes, offset aligned; checked by the caller), retained,
 * under e's lock (commands in flight keep the old buffer). */
void clf__executable_bind_scratch(clf_executable *e, cl_mem buffer, size_t offset);

#endif
