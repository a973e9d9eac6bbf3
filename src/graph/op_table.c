/* The op table (see op_table.h): a row per op. The reference arithmetic of
 * the pointwise ops is here beside each row, as plain C in double or in
 * wrapping 64-bit integers; the OpenCL expressions are written
 * independently of it, so that a bug in one shows against the other. */
#include "graph/op_table.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- Reference arithmetic ---------------------------------------------------- */

/* Wrapping integer arithmetic without signed overflow. */
static int64_t wrap(uint64_t u) { return u <= (uint64_t)INT64_MAX ? (int64_t)u : -(int64_t)(~u) - 1; }

static double f_neg(double a, double b) { return -a; }
static double f_abs(double a, double b) { return fabs(a); }
static double f_exp(double a, double b) { return exp(a); }
static double f_log(double a, double b) { return log(a); }
static double f_sqrt(double a, double b) { return sqrt(a); }
static double f_rsqrt(double a, double b) { return 1.0 / sqrt(a); }
static double f_reciprocal(double a, double b) { return 1.0 / a; }
static double f_sin(double a, double b) { return sin(a); }
static double f_cos(double a, double b) { return cos(a); }
static double f_tanh(double a, double b) { return tanh(a); }
static double f_sigmoid(double a, double b) { return 1.0 / (1.0 + exp(-a)); }
static double f_relu(double a, double b) { return a < 0 ? 0.0 : a; }
static double f_gelu(double a, double b) { return 0.5 * a * (1.0 + erf(a / sqrt(2.0))); }
static double f_silu(double a, double b) { return a * (1.0 / (1.0 + exp(-a))); }
static double f_erf(double a, double b) { return erf(a); }
static double f_floor(double a, double b) { return floor(a); }
static double f_ceil(double a, double b) { return ceil(a); }
static double f_sign(double a, double b) { return a > 0 ? 1.0 : a < 0 ? -1.0 : a; }
static double f_isnan(double a, double b) { return isnan(a) ? 1.0 : 0.0; }

static double f_add(double a, double b) { return a + b; }
static double f_sub(double a, double b) { return a - b; }
static double f_mul(double a, double b) { return a * b; }
static double f_div(double a, double b) { return a / b; }
static double f_pow(double a, double b) { return pow(a, b); }
/* NaN propagates as in numpy's maximum and minimum. */
static double f_maximum(double a, double b) { return (a > b || isnan(a)) ? a : b; }
static double f_minimum(double a, double b) { return (a < b || isnan(a)) ? a : b; }
static double f_eq(double a, double b) { return a == b; }
static double f_ne(double a, double b) { return a != b; }
static double f_lt(double a, double b) { return a < b; }
static double f_le(double a, double b) { return a <= b; }
static double f_gt(double a, double b) { return a > b; }
static double f_ge(double a, double b) { return a >= b; }

static int64_t i_neg(int64_t a, int64_t b) { return wrap(0u - (uint64_t)a); }
static int64_t i_abs(int64_t a, int64_t b) { return a < 0 ? wrap(0u - (uint64_t)a) : a; }
static int64_t i_sign(int64_t a, int64_t b) { return (a > 0) - (a < 0); }
static int64_t i_not(int64_t a, int64_t b) { return a == 0; }
static int64_t i_add(int64_t a, int64_t b) { return wrap((uint64_t)a + (uint64_t)b); }
static int64_t i_sub(int64_t a, int64_t b) { return wrap((uint64_t)a - (uint64_t)b); }
static int64_t i_mul(int64_t a, int64_t b) { return wrap((uint64_t)a * (uint64_t)b); }
/* Truncating division; x / 0 is 0 and x / -1 wraps (no trap). */
static int64_t i_div(int64_t a, int64_t b) { return b == 0 ? 0 : b == -1 ? wrap(0u - (uint64_t)a) : a / b; }
static int64_t i_maximum(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t i_minimum(int64_t a, int64_t b) { return a < b ? a : b; }
/* Bools compare as truth values (any non-zero byte is true). */
static int64_t i_eq(int64_t a, int64_t b) { return a == b; }
static int64_t i_ne(int64_t a, int64_t b) { return a != b; }
static int64_t i_lt(int64_t a, int64_t b) { return a < b; }
static int64_t i_le(int64_t a, int64_t b) { return a <= b; }
static int64_t i_gt(int64_t a, int64_t b) { return a > b; }
static int64_t i_ge(int64_t a, int64_t b) { return a >= b; }
static int64_t i_and(int64_t a, int64_t b) { return a != 0 && b != 0; }
static int64_t i_or(int64_t a, int64_t b) { return a != 0 || b != 0; }

/* ---- The rows ------------------------------------------------------------------ */

/* A unary pointwise row over the floats. */
#define UNARY_F32(E, nm, onnx_, since, fn, clf, cost_, dom)                                        \
    [CLF__OP_##E] = {.name = #nm, .builder = #nm, .onnx = {{onnx_, since}},                      \
                     .cls = CLF__CLASS_POINTWISE, .min_inputs = 1, .max_inputs = 1,             \
                     .dtypes = CLF__DTM_FLOAT, .rule = CLF__DT_SAME, .ref_float = fn,             \
                     .cl = {[CLF_F32] = clf}, .cost = cost_, .fuzz = dom}
/* The ONNX forms of a row, as clf__onnx_form initialisers. */
#define ONNX(...) {__VA_ARGS__}
/* A binary row of the arithmetic dtypes. */
#define BINARY_NUM(E, nm, forms, ff, fi, clf, cli, cll, dom)                                       \
    [CLF__OP_##E] = {.name = #nm, .builder = #nm, .onnx = forms,                                 \
                     .cls = CLF__CLASS_POINTWISE, .min_inputs = 2, .max_inputs = 2,             \
                     .dtypes = CLF__DTM_NUM, .rule = CLF__DT_SAME, .ref_float = ff,             \
                     .ref_int = fi, .cl = {[CLF_F32] = clf, [CLF_I32] = cli, [CLF_I64] = cll},  \
                     .fuzz = dom}
/* A comparison: f32 and i32 operands (bool too when mask says), a bool result. */
#define COMPARE(E, nm, onnx_, mask, ff, fi, clx, clb)                                              \
    [CLF__OP_##E] = {.name = #nm, .builder = #nm, .onnx = {{onnx_, 7}},                          \
                     .cls = CLF__CLASS_POINTWISE, .min_inputs = 2, .max_inputs = 2,             \
                     .dtypes = mask, .rule = CLF__DT_BOOL, .ref_float = ff, .ref_int = fi,      \
                     .cl = {[CLF_F32] = clx, [CLF_I32] = clx, [CLF_I64] = clx, [CLF_BOOL] = clb}, \
                     .fuzz = CLF__FUZZ_COMPARE}
/* A node kind that is not a pointwise expression of the table. */
#define KIND(E, nm, cls_, lo, hi)                                                                  \
    [CLF__OP_##E] = {.name = nm, .cls = CLF__CLASS_##cls_, .min_inputs = lo, .max_inputs = hi,   \
                     .rule = CLF__DT_OWN, .fuzz = CLF__FUZZ_NONE}

const clf__op_info clf__op_table[CLF__OP_COUNT] = {
    KIND(INPUT, "input", LEAF, 0, 0),
    KIND(CONSTANT, "constant", LEAF, 0, 0),

    [CLF__OP_NEG] = {.name = "neg", .builder = "neg", .onnx = {{"Neg", 6}},
                     .cls = CLF__CLASS_POINTWISE, .min_inputs = 1, .max_inputs = 1,
                     .dtypes = CLF__DTM_NUM, .rule = CLF__DT_SAME, .ref_float = f_neg, .ref_int = i_neg,
                     .cl = {[CLF_F32] = "(-$1)", [CLF_I32] = "as_int(0u - as_uint($1))",
                            [CLF_I64] = "as_long(0ul - as_ulong($1))"},
                     .fuzz = CLF__FUZZ_NEGATE},
    [CLF__OP_ABS] = {.name = "abs", .builder = "abs", .onnx = {{"Abs", 6}},
                     .cls = CLF__CLASS_POINTWISE, .min_inputs = 1, .max_inputs = 1,
                     .dtypes = CLF__DTM_NUM, .rule = CLF__DT_SAME, .ref_float = f_abs, .ref_int = i_abs,
                     .cl = {[CLF_F32] = "fabs($1)", [CLF_I32] = "($1 < 0 ? as_int(0u - as_uint($1)) : $1)",
                            [CLF_I64] = "($1 < 0 ? as_long(0ul - as_ulong($1)) : $1)"},
                     .fuzz = CLF__FUZZ_NONNEG},
    UNARY_F32(EXP, exp, "Exp", 6, f_exp, "exp($1)", CLF__COST_COSTLY, CLF__FUZZ_EXP),
    UNARY_F32(LOG, log, "Log", 6, f_log, "log($1)", CLF__COST_COSTLY, CLF__FUZZ_LOG),
    UNARY_F32(SQRT, sqrt, "Sqrt", 6, f_sqrt, "sqrt($1)", CLF__COST_CHEAP, CLF__FUZZ_SQRT),
    UNARY_F32(RSQRT, rsqrt, NULL, 0, f_rsqrt, "rsqrt($1)", CLF__COST_CHEAP, CLF__FUZZ_RSQRT),
    UNARY_F32(RECIPROCAL, reciprocal, "Reciprocal", 6, f_reciprocal, "(1.0f / $1)", CLF__COST_CHEAP,
              CLF__FUZZ_RECIPROCAL),
    UNARY_F32(SIN, sin, "Sin", 7, f_sin, "sin($1)", CLF__COST_COSTLY, CLF__FUZZ_PERIODIC),
    UNARY_F32(COS, cos, "Cos", 7, f_cos, "cos($1)", CLF__COST_COSTLY, CLF__FUZZ_PERIODIC),
    UNARY_F32(TANH, tanh, "Tanh", 6, f_tanh, "tanh($1)", CLF__COST_COSTLY, CLF__FUZZ_UNIT),
    UNARY_F32(SIGMOID, sigmoid, "Sigmoid", 6, f_sigmoid, "(1.0f / (1.0f + exp(-$1)))", CLF__COST_COSTLY,
              CLF__FUZZ_UNIT_NONNEG),
    UNARY_F32(RELU, relu, "Relu", 6, f_relu, "($1 < 0.0f ? 0.0f : $1)", CLF__COST_CHEAP, CLF__FUZZ_NONNEG),
    /* ONNX's Gelu is opset 20; the importer reads it (approximate = "none")
     * at any opset, as ONNX Runtime's contrib op. */
    UNARY_F32(GELU, gelu, "Gelu", 1, f_gelu, "(0.5f * $1 * (1.0f + clf_erf($1 * 0x1.6a09e6p-1f)))",
              CLF__COST_COSTLY, CLF__FUZZ_SMOOTH),
    UNARY_F32(SILU, silu, NULL, 0, f_silu, "($1 / (1.0f + exp(-$1)))", CLF__COST_COSTLY, CLF__FUZZ_SMOOTH),
    UNARY_F32(ERF, erf, "Erf", 9, f_erf, "clf_erf($1)", CLF__COST_COSTLY, CLF__FUZZ_UNIT),
    UNARY_F32(FLOOR, floor, "Floor", 6, f_floor, "floor($1)", CLF__COST_CHEAP, CLF__FUZZ_STEP),
    UNARY_F32(CEIL, ceil, "Ceil", 6, f_ceil, "ceil($1)", CLF__COST_CHEAP, CLF__FUZZ_STEP),
    [CLF__OP_SIGN] = {.name = "sign", .builder = "sign", .onnx = {{"Sign", 9}},
                      .cls = CLF__CLASS_POINTWISE, .min_inputs = 1, .max_inputs = 1,
                      .dtypes = CLF__DTM_NUM, .rule = CLF__DT_SAME, .ref_float = f_sign, .ref_int = i_sign,
                      .cl = {[CLF_F32] = "($1 > 0.0f ? 1.0f : ($1 < 0.0f ? -1.0f : $1))",
                             [CLF_I32] = "(($1 > 0) - ($1 < 0))", [CLF_I64] = "(long)(($1 > 0) - ($1 < 0))"},
                      .fuzz = CLF__FUZZ_SIGN},
    [CLF__OP_NOT] = {.name = "not", .builder = "logical_not", .onnx = {{"Not", 1}},
                     .cls = CLF__CLASS_POINTWISE, .min_inputs = 1, .max_inputs = 1,
                     .dtypes = CLF__DTM_BOOL, .rule = CLF__DT_SAME, .ref_int = i_not,
                     .cl = {[CLF_BOOL] = "(uchar)(!$1)"}, .fuzz = CLF__FUZZ_LOGIC},
    [CLF__OP_ISNAN] = {.name = "isnan", .builder = "isnan", .onnx = {{"IsNaN", 9}},
                       .cls = CLF__CLASS_POINTWISE, .min_inputs = 1, .max_inputs = 1,
                       .dtypes = CLF__DTM_FLOAT, .rule = CLF__DT_BOOL, .ref_float = f_isnan,
                       .cl = {[CLF_F32] = "(uchar)isnan($1)"}, .fuzz = CLF__FUZZ_PREDICATE},

    BINARY_NUM(ADD, add, ONNX({"Add", 7}, {"Sum", 6, .fold = true}, {"Mean", 6, .fold = true, .mean = true}),
               f_add, i_add, "($1 + $2)", "as_int(as_uint($1) + as_uint($2))",
               "as_long(as_ulong($1) + as_ulong($2))", CLF__FUZZ_SUM),
    BINARY_NUM(SUB, sub, ONNX({"Sub", 7}), f_sub, i_sub, "($1 - $2)", "as_int(as_uint($1) - as_uint($2))",
               "as_long(as_ulong($1) - as_ulong($2))", CLF__FUZZ_DIFFERENCE),
    BINARY_NUM(MUL, mul, ONNX({"Mul", 7}), f_mul, i_mul, "($1 * $2)", "as_int(as_uint($1) * as_uint($2))",
               "as_long(as_ulong($1) * as_ulong($2))", CLF__FUZZ_PRODUCT),
    BINARY_NUM(DIV, div, ONNX({"Div", 7}), f_div, i_div, "($1 / $2)",
               "($2 == 0 ? 0 : ($2 == -1 ? as_int(0u - as_uint($1)) : $1 / $2))",
               "($2 == 0 ? 0L : ($2 == -1 ? as_long(0ul - as_ulong($1)) : $1 / $2))", CLF__FUZZ_QUOTIENT),
    [CLF__OP_POW] = {.name = "pow", .builder = "pow", .onnx = {{"Pow", 7}},
                     .cls = CLF__CLASS_POINTWISE, .min_inputs = 2, .max_inputs = 2,
                     .dtypes = CLF__DTM_FLOAT, .rule = CLF__DT_SAME, .ref_float = f_pow,
                     .cl = {[CLF_F32] = "pow($1, $2)"}, .cost = CLF__COST_COSTLY, .fuzz = CLF__FUZZ_POWER},
    BINARY_NUM(MAXIMUM, maximum, ONNX({"Max", 6, .fold = true}), f_maximum, i_maximum,
               "(($1 > $2 || isnan($1)) ? $1 : $2)", "max($1, $2)", "max($1, $2)", CLF__FUZZ_SELECT),
    BINARY_NUM(MINIMUM, minimum, ONNX({"Min", 6, .fold = true}), f_minimum, i_minimum,
               "(($1 < $2 || isnan($1)) ? $1 : $2)", "min($1, $2)", "min($1, $2)", CLF__FUZZ_SELECT),
    /* A bool byte is true when non-zero (2 and 1 are both true), so bools
     * compare as truth values, not as bytes. */
    COMPARE(EQ, eq, "Equal", CLF__DTM_NUM | CLF__DTM_BOOL, f_eq, i_eq, "(uchar)($1 == $2)", "(uchar)(!$1 == !$2)"),
    COMPARE(NE, ne, NULL, CLF__DTM_NUM | CLF__DTM_BOOL, f_ne, i_ne, "(uchar)($1 != $2)", "(uchar)(!$1 != !$2)"),
    COMPARE(LT, lt, "Less", CLF__DTM_NUM, f_lt, i_lt, "(uchar)($1 < $2)", NULL),
    COMPARE(LE, le, "LessOrEqual", CLF__DTM_NUM, f_le, i_le, "(uchar)($1 <= $2)", NULL),
    COMPARE(GT, gt, "Greater", CLF__DTM_NUM, f_gt, i_gt, "(uchar)($1 > $2)", NULL),
    COMPARE(GE, ge, "GreaterOrEqual", CLF__DTM_NUM, f_ge, i_ge, "(uchar)($1 >= $2)", NULL),
    [CLF__OP_AND] = {.name = "and", .builder = "logical_and", .onnx = {{"And", 7}},
                     .cls = CLF__CLASS_POINTWISE, .min_inputs = 2, .max_inputs = 2,
                     .dtypes = CLF__DTM_BOOL, .rule = CLF__DT_SAME, .ref_int = i_and,
                     .cl = {[CLF_BOOL] = "(uchar)($1 && $2)"}, .fuzz = CLF__FUZZ_LOGIC},
    [CLF__OP_OR] = {.name = "or", .builder = "logical_or", .onnx = {{"Or", 7}},
                    .cls = CLF__CLASS_POINTWISE, .min_inputs = 2, .max_inputs = 2,
                    .dtypes = CLF__DTM_BOOL, .rule = CLF__DT_SAME, .ref_int = i_or,
                    .cl = {[CLF_BOOL] = "(uchar)($1 || $2)"}, .fuzz = CLF__FUZZ_LOGIC},

    /* Pointwise ops with writers of their own (codegen_expr.c, reference.c). */
    KIND(WHERE, "where", POINTWISE, 3, 3),
    KIND(CLIP, "clip", POINTWISE, 1, 1),
    KIND(CAST, "cast", POINTWISE, 1, 1),
    KIND(RESHAPE, "reshape", MOVEMENT, 1, 1),
    KIND(TRANSPOSE, "transpose", MOVEMENT, 1, 1),
    KIND(EXPAND, "expand", MOVEMENT, 1, 1),
    KIND(SLICE, "slice", MOVEMENT, 1, 1),
    KIND(SQUEEZE, "squeeze", MOVEMENT, 1, 1),
    KIND(UNSQUEEZE, "unsqueeze", MOVEMENT, 1, 1),
    KIND(REDUCE, "reduce", REDUCTION, 1, 1),
    KIND(MATMUL, "matmul", CONTRACTION, 2, 2),
    /* Pointwise in that each element reads one element of an input, but at
     * an index read from data (gather) or chosen by position (concat). */
    [CLF__OP_GATHER] = {.name = "gather", .builder = "gather", .onnx = {{"Gather", 13}},
                        .cls = CLF__CLASS_POINTWISE, .min_inputs = 2, .max_inputs = 2, .rule = CLF__DT_OWN},
    [CLF__OP_GATHER_ELEMENTS] = {.name = "gather_elements", .builder = "gather_elements",
                                 .onnx = {{"GatherElements", 13}}, .cls = CLF__CLASS_POINTWISE, .min_inputs = 2,
                                 .max_inputs = 2, .rule = CLF__DT_OWN},
    [CLF__OP_CONCAT] = {.name = "concat", .builder = "concat", .onnx = {{"Concat", 13}},
                        .cls = CLF__CLASS_POINTWISE, .min_inputs = 1, .max_inputs = -1, .rule = CLF__DT_OWN},
    /* A cache input with new entries written in place (graph_cache.c):
     * always stored, by a kernel of its own over the new entries. */
    [CLF__OP_CACHE_WRITE] = {.name = "cache_write", .builder = "cache_write", .cls = CLF__CLASS_POINTWISE,
                             .min_inputs = 2, .max_inputs = 2, .rule = CLF__DT_OWN},
};

/* The table's ONNX names, sorted by name and then by (op, form), so that
 * the entries of one name come in the table's order; made once. */
typedef struct onnx_name {
    const char *name;
    int op, form;
} onnx_name;

static onnx_name onnx_names[CLF__OP_COUNT * CLF__ONNX_FORMS];
static size_t nonnx_names;
static pthread_once_t onnx_names_once = PTHREAD_ONCE_INIT;

static int onnx_name_cmp(const void *a, const void *b)
{
    const onnx_name *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c)
        return c;
    return x->op != y->op ? (x->op < y->op ? -1 : 1) : (x->form > y->form) - (x->form < y->form);
}

static void onnx_names_make(void)
{
    for (int op = 0; op < CLF__OP_COUNT; op++)
        for (int i = 0; i < CLF__ONNX_FORMS; i++)
            if (clf__op_table[op].onnx[i].name)
                onnx_names[nonnx_names++] = (onnx_name){clf__op_table[op].onnx[i].name, op, i};
    qsort(onnx_names, nonnx_names, sizeof *onnx_names, onnx_name_cmp);
}

clf__op clf__op_from_onnx(const char *onnx, int64_t opset, const clf__onnx_form **form)
{
    pthread_once(&onnx_names_once, onnx_names_make);
    /* The first entry not below onnx, then its name's entries in the
     * table's order: the first whose opsets hold. */
    size_t lo = 0, hi = nonnx_names;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(onnx_names[mid].name, onnx) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t k = lo; k < nonnx_names && !strcmp(onnx_names[k].name, onnx); k++) {
        const clf__onnx_form *f = &clf__op_table[onnx_names[k].op].onnx[onnx_names[k].form];
        if (opset < 0 || (opset >= f->since && (!f->until || opset <= f->until))) {
            if (form)
                *form = f;
            return (clf__op)onnx_names[k].op;
        }
    }
    return CLF__OP_COUNT;
}
