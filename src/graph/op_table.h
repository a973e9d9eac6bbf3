/* The op table: one row per op, holding every fact a stage asks of an op
 * (its names, arity, dtype rule, planner class, reference arithmetic,
 * OpenCL expression per dtype, cost and the fuzzer's value domain). Stages
 * look facts up here instead of switching over ops; adding a pointwise op
 * is a row in op_table.c (and, when the enum grows, the count below).
 *
 * The internal op enum flattens the public clf_unary_op and clf_binary_op
 * lists (in their order, so clf__op_of_unary is an addition) with the
 * other node kinds. */
#ifndef CLFUSE_OP_TABLE_H
#define CLFUSE_OP_TABLE_H

#include <assert.h>
#include <stdbool.h>
#include <stdint.h>

#include "clfuse/graph.h"

/* Ops that are neither unary nor binary pointwise: X(enum suffix). */
#define CLF__OP_LEAF_LIST(X) X(INPUT) X(CONSTANT)
#define CLF__OP_OTHER_LIST(X)                                                                      \
    X(WHERE) X(CLIP) X(CAST) X(RESHAPE) X(TRANSPOSE) X(EXPAND) X(SLICE) X(SQUEEZE) X(UNSQUEEZE)    \
    X(REDUCE) X(MATMUL) X(GATHER) X(GATHER_ELEMENTS) X(CONCAT) X(CACHE_WRITE)

typedef enum clf__op {
#define CLF__OP_ENUM_(E) CLF__OP_##E,
#define CLF__OP_ENUM2_(E, n) CLF__OP_##E,
    CLF__OP_LEAF_LIST(CLF__OP_ENUM_)
    CLF_UNARY_OP_LIST(CLF__OP_ENUM2_)
    CLF_BINARY_OP_LIST(CLF__OP_ENUM2_)
    CLF__OP_OTHER_LIST(CLF__OP_ENUM_)
#undef CLF__OP_ENUM_
#undef CLF__OP_ENUM2_
    CLF__OP_COUNT
} clf__op;

static_assert(CLF__OP_COUNT == 52, "a new op: give it a row in op_table.c");
static_assert(CLF_UNARY_COUNT == 20 && CLF_BINARY_COUNT == 15, "a new public op: give it a row in op_table.c");

#define CLF__OP_FIRST_UNARY CLF__OP_NEG
#define CLF__OP_FIRST_BINARY CLF__OP_ADD

/* What the planner does with an op. */
typedef enum clf__node_class {
    CLF__CLASS_LEAF,        /* no computation: inputs and constants */
    CLF__CLASS_POINTWISE,   /* one element from the same element of each input */
    CLF__CLASS_MOVEMENT,    /* pure index arithmetic */
    CLF__CLASS_REDUCTION,
    CLF__CLASS_CONTRACTION,
} clf__node_class;

/* The result dtype of a pointwise op from its operands'. */
typedef enum clf__dtype_rule {
    CLF__DT_SAME,  /* the operands' dtype */
    CLF__DT_BOOL,  /* bool (comparisons) */
    CLF__DT_OWN,   /* set by the builder from its own arguments (cast, where, movement, ...) */
} clf__dtype_rule;

/* Whether a value is worth computing once and carrying (a transcendental
 * function) rather than computing again where it is read. */
typedef enum clf__op_cost {
    CLF__COST_CHEAP,
    CLF__COST_COSTLY,
} clf__op_cost;

/* How the differential fuzzer may draw a pointwise op and what it knows of
 * the result from what it knows of the operands (tests/fuzz/fuzz_ops.c
 * interprets each; an op with an existing domain is drawn without fuzzer
 * changes). CLF__FUZZ_NONE: not drawn as a pointwise op. */
#define CLF__FUZZ_DOMAIN_LIST(X)                                                                   \
    X(NONE)          /* not drawn on its own */                                                    \
    X(NEGATE)        /* exact, same magnitude, either sign (neg) */                                \
    X(NONNEG)        /* exact, same magnitude, >= 0 (abs, relu) */                                 \
    X(EXP)           /* exp: grows to overflow past 88 */                                          \
    X(LOG)           /* log: any input, NaN/-inf for <= 0 */                                       \
    X(SQRT)          /* sqrt: NaN for < 0 */                                                       \
    X(RSQRT)         /* rsqrt: >= 0, unbounded near 0 */                                           \
    X(RECIPROCAL)    /* 1/x: unbounded near 0, the sign of x */                                    \
    X(PERIODIC)      /* sin, cos: kept to |x| <= 1e4 */                                            \
    X(UNIT)          /* bounded by 1 (tanh, erf) */                                                \
    X(UNIT_NONNEG)   /* in [0, 1] (sigmoid) */                                                     \
    X(SMOOTH)        /* about the input's magnitude, either sign (gelu, silu) */                   \
    X(STEP)          /* discontinuous, magnitude + 1: only on exact operands (floor, ceil) */      \
    X(SIGN)          /* -1, 0 or 1: only on exact operands */                                      \
    X(SUM)           /* a + b */                                                                   \
    X(DIFFERENCE)    /* a - b */                                                                   \
    X(PRODUCT)       /* a * b */                                                                   \
    X(QUOTIENT)      /* a / b: unbounded */                                                        \
    X(POWER)         /* pow(a, b): unbounded, >= 0 for a >= 0 */                                   \
    X(SELECT)        /* one of the operands (maximum, minimum) */                                  \
    X(COMPARE)       /* bool from exact operands */                                                \
    X(LOGIC)         /* bool from bools */                                                         \
    X(PREDICATE)     /* bool from any float (isnan) */

typedef enum clf__fuzz_domain {
#define CLF__FUZZ_ENUM_(E) CLF__FUZZ_##E,
    CLF__FUZZ_DOMAIN_LIST(CLF__FUZZ_ENUM_)
#undef CLF__FUZZ_ENUM_
    CLF__FUZZ_COUNT
} clf__fuzz_domain;

/* Bit masks of clf_dtype values. */
#define CLF__DTM(dt) (1u << (dt))
#define CLF__DTM_F32 CLF__DTM(CLF_F32)
#define CLF__DTM_I32 CLF__DTM(CLF_I32)
#define CLF__DTM_BOOL CLF__DTM(CLF_BOOL)
#define CLF__DTM_I64 CLF__DTM(CLF_I64)
#define CLF__DTM_F16 CLF__DTM(CLF_F16)
#define CLF__DTM_BF16 CLF__DTM(CLF_BF16)
/* The floats: f32 and the storage floats computed in it (dtype_table.h),
 * which share its row's reference and OpenCL expression. */
#define CLF__DTM_FLOAT (CLF__DTM_F32 | CLF__DTM_F16 | CLF__DTM_BF16)
#define CLF__DTM_INT (CLF__DTM_I32 | CLF__DTM_I64)
#define CLF__DTM_NUM (CLF__DTM_FLOAT | CLF__DTM_INT)

/* Reference arithmetic of a pointwise op (unary ops ignore b): in double
 * for float operands (then rounded to the storage type), in wrapping 64-bit
 * integers for integer and bool operands (then truncated to the storage
 * width, which for i32 is the two's-complement wrap the kernels give). */
typedef double (*clf__ref_float_fn)(double a, double b);
typedef int64_t (*clf__ref_int_fn)(int64_t a, int64_t b);

/* An ONNX op that maps onto a row: its name, the opsets whose form the
 * importer reads (since to until; until 0: every later one), and for a
 * binary row whether it takes any number of inputs, broadcast together and
 * folded left with the row's op (Sum, Max, Min; one input is itself), then
 * divided by their count (mean: Mean). */
typedef struct clf__onnx_form {
    const char *name; /* NULL: none */
    int since, until;
    bool fold, mean;
} clf__onnx_form;

/* The most ONNX ops that map onto one row (Add, Sum and Mean onto add). */
#define CLF__ONNX_FORMS 3

typedef struct clf__op_info {
    const char *name;    /* kernel names and logs: "add", "relu", "not", "transpose" */
    const char *builder; /* the public builder's name without clf_: "logical_not"; NULL if none */
    clf__onnx_form onnx[CLF__ONNX_FORMS]; /* the ONNX ops that map onto it directly */
    clf__node_class cls;
    int8_t min_inputs, max_inputs; /* max -1: any number */
    uint8_t dtypes;                /* CLF__DTM mask of the operand dtypes it takes */
    clf__dtype_rule rule;
    clf__ref_float_fn ref_float;   /* pointwise unary and binary ops */
    clf__ref_int_fn ref_int;
    /* printf-like OpenCL expression over $1, $2 by operand dtype; NULL where
     * the op does not take the dtype or has its own writer. Storage floats
     * use their compute dtype's (f32's): their entries stay NULL. */
    const char *cl[CLF_DTYPE_COUNT];
    clf__op_cost cost;
    clf__fuzz_domain fuzz;
} clf__op_info;

extern const clf__op_info clf__op_table[CLF__OP_COUNT];

static inline const clf__op_info *clf__op_info_of(clf__op op)
{
    assert((unsigned)op < CLF__OP_COUNT);
    return &clf__op_table[op];
}

static inline clf__op clf__op_of_unary(clf_unary_op u) { return (clf__op)(CLF__OP_FIRST_UNARY + (int)u); }
static inline clf__op clf__op_of_binary(clf_binary_op b) { return (clf__op)(CLF__OP_FIRST_BINARY + (int)b); }

static inline bool clf__op_is_unary(clf__op op)
{
    return op >= CLF__OP_FIRST_UNARY && op < CLF__OP_FIRST_UNARY + CLF_UNARY_COUNT;
}
static inline bool clf__op_is_binary(clf__op op)
{
    return op >= CLF__OP_FIRST_BINARY && op < CLF__OP_FIRST_BINARY + CLF_BINARY_COUNT;
}
/* The public enum value of a unary or binary op. */
static inline clf_unary_op clf__op_unary(clf__op op) { return (clf_unary_op)(op - CLF__OP_FIRST_UNARY); }
static inline clf_binary_op clf__op_binary(clf__op op) { return (clf_binary_op)(op - CLF__OP_FIRST_BINARY); }

/* Whether the op reads an index from its second input (the indices) in
 * the index arithmetic of its load: the indices must be in memory. */
static inline bool clf__op_reads_indices(clf__op op) { return op == CLF__OP_GATHER || op == CLF__OP_GATHER_ELEMENTS; }

/* The op whose ONNX form (*form, may be NULL) is named onnx at opset
 * opset (any opset where opset < 0), or CLF__OP_COUNT. */
clf__op clf__op_from_onnx(const char *onnx, int64_t opset, const clf__onnx_form **form);

#endif
