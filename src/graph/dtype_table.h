/* The dtype table: one row per clf_dtype with everything a stage needs to
 * know about it — its name and size, whether it is a float, integer or
 * bool, the dtype its values are computed in, its spelling in OpenCL C
 * (buffer element type, loads, stores, the rounding of a computed value),
 * the reference interpreter's conversions, and its ONNX and numpy names.
 *
 * Storage dtypes (f16, bf16) are computed in f32: a kernel loads them into
 * float registers, computes in float and rounds every value of such a node
 * to the storage type (nearest even) — the reference does the same — so
 * that fused, unfused and reference results agree wherever the arithmetic
 * is exact. Nothing here needs cl_khr_fp16: f16 goes through
 * vload_half/vstore_half, bf16 through 16-bit integers.
 *
 * Adding a dtype: its public enum value (graph.h), its row in
 * dtype_table.c, its ops' dtype masks in op_table.c, and its tests. */
#ifndef CLFUSE_DTYPE_TABLE_H
#define CLFUSE_DTYPE_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clfuse/graph.h"

typedef enum clf__dtype_kind {
    CLF__DK_FLOAT, /* f32 and the storage floats: NaN, infinities, rounding */
    CLF__DK_INT,   /* two's-complement integers: arithmetic wraps */
    CLF__DK_BOOL,  /* one byte, any non-zero byte true; results 0 or 1 */
} clf__dtype_kind;

/* Kernel spellings are printf-like templates over $b (the buffer's
 * parameter name), $i (an element index expression), $v (a value of the
 * compute type) and $w (a vector width: 2, 4, 8 or 16). */
typedef struct clf__dtype_info {
    const char *name;   /* "f32": clf_dtype_name, logs, cache keys */
    size_t size;        /* bytes per element, in buffers and host data */
    clf__dtype_kind kind;
    clf_dtype compute;  /* the dtype its values are held and computed in (f16: f32) */
    const char *cl_storage; /* the element type of its buffers: "float", "half", "ushort" */
    const char *cl_value;   /* the type of its values in registers (the compute dtype's) */
    const char *load;       /* one element: "$b[$i]" */
    const char *load_vec;   /* $w consecutive elements from $b + $i, any alignment */
    const char *load_vec_aligned; /* the same where $b + $i is aligned to the vector */
    const char *store;      /* a statement storing $v (already rounded) at $i */
    const char *store_vec;  /* $w consecutive values, any alignment */
    const char *store_vec_aligned;
    /* The kernel function rounding a value of the compute type to this one
     * ("clf_round_f16"; its vector forms add _<width>: clf_round_f16_4);
     * NULL: nothing to do. Codegen's prelude defines them. */
    const char *round_fn;
    /* Reference conversions of element i of a host array of this dtype. */
    double (*get_f64)(const void *p, int64_t i);  /* bool: 0 or 1 */
    int64_t (*get_i64)(const void *p, int64_t i); /* integers and bool exactly; floats truncated */
    /* Stores v as a cast to this dtype would (floats round, through f32
     * for the storage floats; integers saturate and take NaN to 0; bool is
     * v != 0) and returns the stored value. */
    double (*put_f64)(void *p, int64_t i, double v);
    /* Stores an integer value (integers wrap, floats round once). */
    void (*put_i64)(void *p, int64_t i, int64_t v);
    int onnx_type;          /* TensorProto.DataType */
    const char *onnx_name;  /* "float", "float16" */
    const char *npy_descr;  /* numpy's descr: "<f4"; bf16 is "<u2" bit patterns */
} clf__dtype_info;

extern const clf__dtype_info clf__dtype_table[CLF_DTYPE_COUNT];

/* The row of dt (dt must be a valid dtype). */
static inline const clf__dtype_info *clf__dtype_info_of(clf_dtype dt) { return &clf__dtype_table[dt]; }

static inline bool clf__dtype_is_float(clf_dtype dt) { return clf__dtype_table[dt].kind == CLF__DK_FLOAT; }

/* The dtype whose values stand for dt's in kernels and in the op table's
 * expressions (f16, bf16: f32). */
static inline clf_dtype clf__dtype_compute(clf_dtype dt) { return clf__dtype_table[dt].compute; }

/* f64 -> i32 as every conversion to i32 in the reference does: toward
 * zero, saturating at the int32 range, NaN to 0. */
int32_t clf__dtype_sat_i32(double v);

/* Whether dt is stored in fewer bits than it is computed in (a value of it
 * must be rounded after every computation). */
static inline bool clf__dtype_is_storage(clf_dtype dt) { return clf__dtype_table[dt].round_fn != NULL; }

/* The dtype of an ONNX TensorProto.DataType; false when it has none. */
bool clf__dtype_from_onnx(int onnx_type, clf_dtype *out);
/* The dtype of a numpy descr ("<f4"); false when it has none. */
bool clf__dtype_from_npy(const char *descr, clf_dtype *out);

#endif
