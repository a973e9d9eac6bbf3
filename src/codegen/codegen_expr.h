/* Expressions of generated kernels: the value of any node at any view as
 * OpenCL C, each op computed once per view as a named temporary. Shared by
 * the pointwise and reduction kernel writers; how a function reaches loaded
 * values and its own kernel's reduction results is up to its hooks. */
#ifndef CLFUSE_CODEGEN_EXPR_H
#define CLFUSE_CODEGEN_EXPR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "index/index_algebra.h"
#include "planner/planner.h"
#include "util/strbuf.h"

/* The buffer of a "load" that reads no memory: the slot's value is its
 * index itself, as a long (concat's position along its axis). */
#define CLF__CG_INDEX_VALUE UINT32_MAX

typedef struct clf__cg_slot {
    uint32_t buffer; /* or CLF__CG_INDEX_VALUE */
    clf__ix index;
    clf_dtype dtype;
} clf__cg_slot;

typedef struct clf__cg_memo {
    char *key;
    char *value;
} clf__cg_memo;

typedef struct clf__cg_fn clf__cg_fn;

/* load: the expression for buffer[index], written into name. reduction:
 * the expression for a reduction of this kernel read at view v (NULL when
 * the kernel has none). product: likewise for this kernel's MATMUL node
 * (its accumulator). */
typedef struct clf__cg_hooks {
    const char *(*load)(clf__cg_fn *f, uint32_t buffer, clf__ix index, clf_dtype dt, char *name,
                        size_t cap);
    const char *(*reduction)(clf__cg_fn *f, uint32_t node, const clf__view *v, char *name, size_t cap);
    const char *(*product)(clf__cg_fn *f, uint32_t node, const clf__view *v, char *name, size_t cap);
    void *user;
} clf__cg_hooks;

/* One generated function: its index temporaries, its statements, its
 * memoised values and (for clf__cg_load_slot) the loads it takes. */
struct clf__cg_fn {
    const clf_graph *g;
    const clf__plan *plan;
    uint32_t k;
    clf__cg_hooks hooks;
    clf__ixgen *ix;       /* own_ix, or one shared by several functions */
    clf__ixgen own_ix;
    clf__strbuf idx_code; /* own_ix's temporaries */
    clf__strbuf body;
    clf__cg_memo *memo;
    size_t nmemo, cap_memo;
    clf__cg_slot *slots;
    size_t nslots, cap_slots;
    int ntemps;
    bool failed;
    /* The node failed was set for, where it has no OpenCL expression (an op
     * the planner should not have left to be computed inline): a planner
     * fault, not memory. */
    const clf__node *no_expression;
    /* vec > 1: the function computes vec consecutive elements at once, its
     * f32 temporaries are floatN vectors (the CPU reduction form's vector
     * loop). An op without a vector form there (any non-f32 value) sets
     * novec instead of failing, and the writer falls back to scalar code. */
    int vec;
    bool novec;
    /* Of a vector function (vec > 1) whose lanes are consecutive positions
     * along an axis, w-aligned: the deps bit of that axis' index variable
     * (clf__cg_load_lanes). A concatenation along it is the input the
     * lanes fall in, where the inputs' offsets are multiples of vec. 0:
     * not known (no concatenation in vectors). */
    uint32_t lane_bit;
    /* A node this function evaluates as its input forward_input, where the
     * writer knows the two agree at every element it asks for (attention's
     * causal WHERE at the keys it visits); UINT32_MAX: none. */
    uint32_t forward_node;
    int forward_input;
    /* Storage floats (f16, bf16) computed in f32 without their rounding:
     * the tensor-core attention form's logits stay in f32 between the f32
     * accumulator and the softmax, as FlashAttention keeps them (a rounding
     * per score would cost more than the score's share of the mma). */
    bool no_round;
};

void clf__cg_fn_init(clf__cg_fn *f, const clf_graph *g, const clf__plan *plan, uint32_t k,
                     const clf__cg_hooks *hooks);
void clf__cg_fn_free(clf__cg_fn *f);

/* The expression of node id's value at view v, emitting what it needs. The
 * string lives as long as f. */
const char *clf__cg_value(clf__cg_fn *f, uint32_t id, const clf__view *v);

/* The expression of node id's value at view v if f has already emitted
 * it, else NULL: emits nothing. */
const char *clf__cg_known(clf__cg_fn *f, uint32_t id, const clf__view *v);

/* Makes value (an expression valid in f's body) the value of node id at
 * view v in f, so that f reads it instead of computing it: a value carried
 * in from elsewhere. */
void clf__cg_seed(clf__cg_fn *f, uint32_t id, const clf__view *v, const char *value);

/* A load hook: loads become parameters l0, l1, ... of the function,
 * recorded in f->slots (the same element loaded twice is one slot). */
const char *clf__cg_load_slot(clf__cg_fn *f, uint32_t buffer, clf__ix index, clf_dtype dt, char *name,
                              size_t cap);

/* The slot's index in f->slots for buffer at index, adding it if new; -1
 * when out of memory. */
long clf__cg_slot_find(clf__cg_slot **slots, size_t *nslots, size_t *cap, uint32_t buffer, clf__ix index,
                       clf_dtype dt);

/* Fills params with the kernel's parameters: the buffers it reads, then
 * those it writes. False when out of memory. */
bool clf__cg_params(const clf__plan_kernel *K, uint32_t **params, uint32_t *nparams);

/* Whether the kernel needs 64-bit indices (IDX_T ulong): its own space of
 * space elements, or a buffer it reads, holds more than INT32_MAX. */
bool clf__cg_wide_index(const clf_graph *g, const clf__plan *plan, const clf__plan_kernel *K, uint64_t space);

/* Writes "#define CLF_KERNEL_NAME name", "#define CLF_PARAMS ..." (each
 * buffer parameter b<id>, the first nreads const, the offset o_<id> after
 * one in the scratch) and "#define CLF_ARGS
 * ...", each on its own line: the kernel signature every template takes. */
void clf__cg_signature(clf__strbuf *src, const clf_graph *g, const clf__plan *plan, const char *name,
                       const uint32_t *params, uint32_t nparams, uint32_t nreads);

/* The OpenCL C type of a dtype's values in registers: float (also for the
 * storage floats f16 and bf16), int, uchar, long. */
const char *clf__cg_ctype(clf_dtype dt);
/* The element type of a dtype's buffers: float, half, ushort, int, ... */
const char *clf__cg_storage_type(clf_dtype dt);

/* The pointer to buffer's first element: b<buffer>, or (b<buffer> +
 * o_<buffer>) for one in the scratch (clf__plan_buffer_in_scratch: the
 * parameter is the scratch buffer, o_<buffer> the region's offset in
 * elements, a const ulong right after it in CLF_PARAMS). */
const char *clf__cg_buffer_ref(const clf__plan *plan, uint32_t buffer, char *out, size_t cap);
/* Loads and stores of buffer elements, spelled by the dtype table (every
 * kernel writer goes through these; see graph/dtype_table.h). index is an
 * element index expression, value one of the compute type, already
 * rounded to dt. Vector forms move width consecutive elements; aligned:
 * the caller proved buffer + index aligned to the vector. */
const char *clf__cg_load_expr(const clf__plan *plan, clf_dtype dt, uint32_t buffer, const char *index, char *out,
                              size_t cap);
void clf__cg_load_vec(const clf__plan *plan, clf__strbuf *sb, clf_dtype dt, uint32_t buffer, const char *index,
                      int width, bool aligned);
/* Appends "    <store>;\n". */
void clf__cg_store(const clf__plan *plan, clf__strbuf *sb, clf_dtype dt, uint32_t buffer, const char *index,
                   const char *value);
void clf__cg_store_vec(const clf__plan *plan, clf__strbuf *sb, clf_dtype dt, uint32_t buffer, const char *index,
                       const char *value, int width, bool aligned);
/* clf__cg_store_vec of value as a float<width> (a scalar widened), the
 * vector functions' stores. */
void clf__cg_store_float_vec(const clf__plan *plan, clf__strbuf *sb, clf_dtype dt, uint32_t buffer, const char *index,
                             const char *value, int width);
/* Appends value (width lanes: 1, or a vector of 2, 4, 8 or 16) rounded to
 * dt (the value itself for dtypes computed in their own type). */
void clf__cg_round(clf__strbuf *sb, clf_dtype dt, const char *value);
void clf__cg_round_vec(clf__strbuf *sb, clf_dtype dt, const char *value, int width);
/* An exact literal of a value of dtype. */
void clf__cg_literal(clf__strbuf *sb, clf_dtype dt, double v);
/* The C expression of a read of dtype dt: b<buffer>[index] (as the dtype
 * table spells it), or for CLF__CG_INDEX_VALUE the index as a long. */
/* Load hook of a vector function (f->vec lanes, f->lane_bit their
 * variable): an element that does not move along the lanes is a scalar
 * (widened where it meets a vector); one that moves as the lanes' index, a
 * float vector loaded at once (vload, or vload_half and the like for the
 * storage floats); anything else (a gather, an integer or an index value
 * varying along the lanes) has no vector form, and sets f->novec. */
const char *clf__cg_load_lanes(clf__cg_fn *f, uint32_t buffer, clf__ix index, clf_dtype dt, char *name, size_t cap);
const char *clf__cg_read_expr(const clf__plan *plan, uint32_t buffer, const clf__ix *index, clf_dtype dt, char *out,
                              size_t cap);
/* "#define CLF_GIX_<node>(j) ..." for each gather kernel K evaluates: how its
 * indices are read (a buffer, or a literal). */
void clf__cg_gather_defs(clf__strbuf *src, const clf_graph *g, const clf__plan *plan, const clf__plan_kernel *K);
/* An exact i64 literal. */
void clf__cg_literal_i64(clf__strbuf *sb, int64_t v);
/* <prefix>_fused_<sorted distinct op names>, or <prefix>_copy: the kernel's
 * entry (clf__codegen_kernel adds the plan index to the name shown). */
char *clf__cg_kernel_name(const clf_graph *g, const uint32_t *ops, uint32_t nops, const char *prefix);

/* The name of a two-launch kernel's second entry: "<entry>_final"
 * (malloc'd; NULL when out of memory). */
char *clf__cg_final_name(const char *entry);
/* The ops of a kernel in plan order, space separated ("mul add relu");
 * NULL when out of memory. */
char *clf__cg_op_list(const clf_graph *g, const uint32_t *ops, uint32_t nops);
/* The two comment lines every generated kernel starts with (its name and
 * its ops), then, where K computes or stores f16/bf16 values, the rounding
 * functions of the storage floats. */
void clf__cg_source_header(clf__strbuf *src, const clf_graph *g, const clf__plan_kernel *K, const char *name,
                           const char *ops);
/* Those rounding functions (and f16 loads from raw bits), written once. */
const char *clf__cg_storage_floats(void);

#endif
