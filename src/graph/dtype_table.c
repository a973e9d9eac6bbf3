/* The dtype table (see dtype_table.h) and the host conversions between f32
 * and the 16-bit floats. */
#include "graph/dtype_table.h"

#include <assert.h>
#include <math.h>
#include <string.h>

static_assert(CLF_DTYPE_COUNT == 6, "a row per dtype in clf__dtype_table");

/* ---- f16 and bf16 bit conversions (round to nearest even) ---- */

static uint32_t f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float f32_of_bits(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

uint16_t clf_f16_from_f32(float x)
{
    uint32_t u = f32_bits(x), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u) /* NaN: quiet, the payload's top bits kept */
        return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) /* 65520 and above round to infinity */
        return (uint16_t)(sign | 0x7c00u);
    if (a >= 0x38800000u) { /* a normal f16: rebias the exponent, round 13 bits off */
        uint32_t r = a - 0x38000000u;
        r += 0xfffu + ((r >> 13) & 1u);
        return (uint16_t)(sign | (r >> 13));
    }
    if (a < 0x33000000u) /* below 2^-25: zero */
        return (uint16_t)sign;
    /* A subnormal: units of 2^-24, rounded to nearest even. */
    uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - e, q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u)))
        q++;
    return (uint16_t)(sign | q);
}

float clf_f32_from_f16(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f)
        return f32_of_bits(sign | 0x7f800000u | (m << 13));
    if (e)
        return f32_of_bits(sign | ((e + 112u) << 23) | (m << 13));
    if (!m)
        return f32_of_bits(sign);
    e = 113; /* a subnormal: normalise it */
    while (!(m & 0x400u)) {
        m <<= 1;
        e--;
    }
    return f32_of_bits(sign | (e << 23) | ((m & 0x3ffu) << 13));
}

uint16_t clf_bf16_from_f32(float x)
{
    uint32_t u = f32_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float clf_f32_from_bf16(uint16_t h) { return f32_of_bits((uint32_t)h << 16); }

/* ---- reference conversions ---- */

int32_t clf__dtype_sat_i32(double v)
{
    if (isnan(v))
        return 0;
    if (v >= 2147483647.0)
        return INT32_MAX;
    if (v <= -2147483648.0)
        return INT32_MIN;
    return (int32_t)v;
}

static int64_t sat_i64(double v)
{
    if (isnan(v))
        return 0;
    if (v >= 9223372036854775807.0)
        return INT64_MAX;
    if (v <= -9223372036854775808.0)
        return INT64_MIN;
    return (int64_t)v;
}

static double f32_get(const void *p, int64_t i) { return ((const float *)p)[i]; }
static int64_t f32_get_i(const void *p, int64_t i) { return sat_i64(((const float *)p)[i]); }
static double f32_put(void *p, int64_t i, double v) { return ((float *)p)[i] = (float)v; }
static void f32_put_i(void *p, int64_t i, int64_t v) { ((float *)p)[i] = (float)v; }

static double i32_get(const void *p, int64_t i) { return ((const int32_t *)p)[i]; }
static int64_t i32_get_i(const void *p, int64_t i) { return ((const int32_t *)p)[i]; }
static double i32_put(void *p, int64_t i, double v) { return ((int32_t *)p)[i] = clf__dtype_sat_i32(v); }
static void i32_put_i(void *p, int64_t i, int64_t v)
{
    uint32_t w = (uint32_t)(uint64_t)v; /* two's-complement wrap without implementation-defined casts */
    int32_t r;
    memcpy(&r, &w, sizeof r);
    ((int32_t *)p)[i] = r;
}

static double bool_get(const void *p, int64_t i) { return ((const uint8_t *)p)[i] != 0; }
static int64_t bool_get_i(const void *p, int64_t i) { return ((const uint8_t *)p)[i] != 0; }
static double bool_put(void *p, int64_t i, double v) { return ((uint8_t *)p)[i] = v != 0; }
static void bool_put_i(void *p, int64_t i, int64_t v) { ((uint8_t *)p)[i] = v != 0; }

static double i64_get(const void *p, int64_t i) { return (double)((const int64_t *)p)[i]; }
static int64_t i64_get_i(const void *p, int64_t i) { return ((const int64_t *)p)[i]; }
static double i64_put(void *p, int64_t i, double v) { return (double)(((int64_t *)p)[i] = sat_i64(v)); }
static void i64_put_i(void *p, int64_t i, int64_t v) { ((int64_t *)p)[i] = v; }

/* The storage floats round through f32, as a kernel computing in f32 does. */
static double f16_get(const void *p, int64_t i) { return clf_f32_from_f16(((const uint16_t *)p)[i]); }
static int64_t f16_get_i(const void *p, int64_t i) { return sat_i64(f16_get(p, i)); }
static double f16_put(void *p, int64_t i, double v)
{
    uint16_t h = clf_f16_from_f32((float)v);
    ((uint16_t *)p)[i] = h;
    return clf_f32_from_f16(h);
}
static void f16_put_i(void *p, int64_t i, int64_t v) { ((uint16_t *)p)[i] = clf_f16_from_f32((float)v); }

static double bf16_get(const void *p, int64_t i) { return clf_f32_from_bf16(((const uint16_t *)p)[i]); }
static int64_t bf16_get_i(const void *p, int64_t i) { return sat_i64(bf16_get(p, i)); }
static double bf16_put(void *p, int64_t i, double v)
{
    uint16_t h = clf_bf16_from_f32((float)v);
    ((uint16_t *)p)[i] = h;
    return clf_f32_from_bf16(h);
}
static void bf16_put_i(void *p, int64_t i, int64_t v) { ((uint16_t *)p)[i] = clf_bf16_from_f32((float)v); }

/* Rows: the plain types load and store as array elements (aligned vectors
 * through vector pointers, which NVIDIA's compiler turns into one wide
 * access where vloadN of an address it cannot prove aligned is not); f16
 * through vload_half / vstore_half_rte, aligned vectors as raw bits
 * through ushort vector pointers converted in registers (clf_f16_float4:
 * NVIDIA's compiler makes vload_half8 and vloada_half8 alike eight 2-byte
 * loads, seen in the PTX of the few-rows GEMM); bf16 as the high half of
 * an f32. */
const clf__dtype_info clf__dtype_table[CLF_DTYPE_COUNT] = {
    [CLF_F32] = {.name = "f32", .size = 4, .kind = CLF__DK_FLOAT, .compute = CLF_F32,
                 .cl_storage = "float", .cl_value = "float",
                 .load = "$b[$i]", .load_vec = "vload$w(0, $b + $i)",
                 .load_vec_aligned = "*(const __global float$w *)($b + $i)",
                 .store = "$b[$i] = $v", .store_vec = "vstore$w($v, 0, $b + $i)",
                 .store_vec_aligned = "*(__global float$w *)($b + $i) = $v",
                 .get_f64 = f32_get, .get_i64 = f32_get_i, .put_f64 = f32_put, .put_i64 = f32_put_i,
                 .onnx_type = 1, .onnx_name = "float", .npy_descr = "<f4"},
    [CLF_I32] = {.name = "i32", .size = 4, .kind = CLF__DK_INT, .compute = CLF_I32,
                 .cl_storage = "int", .cl_value = "int",
                 .load = "$b[$i]", .load_vec = "vload$w(0, $b + $i)",
                 .load_vec_aligned = "*(const __global int$w *)($b + $i)",
                 .store = "$b[$i] = $v", .store_vec = "vstore$w($v, 0, $b + $i)",
                 .store_vec_aligned = "*(__global int$w *)($b + $i) = $v",
                 .get_f64 = i32_get, .get_i64 = i32_get_i, .put_f64 = i32_put, .put_i64 = i32_put_i,
                 .onnx_type = 6, .onnx_name = "int32", .npy_descr = "<i4"},
    [CLF_BOOL] = {.name = "bool", .size = 1, .kind = CLF__DK_BOOL, .compute = CLF_BOOL,
                  .cl_storage = "uchar", .cl_value = "uchar",
                  .load = "$b[$i]", .load_vec = "vload$w(0, $b + $i)",
                  .load_vec_aligned = "*(const __global uchar$w *)($b + $i)",
                  .store = "$b[$i] = $v", .store_vec = "vstore$w($v, 0, $b + $i)",
                  .store_vec_aligned = "*(__global uchar$w *)($b + $i) = $v",
                  .get_f64 = bool_get, .get_i64 = bool_get_i, .put_f64 = bool_put, .put_i64 = bool_put_i,
                  .onnx_type = 9, .onnx_name = "bool", .npy_descr = "|b1"},
    [CLF_I64] = {.name = "i64", .size = 8, .kind = CLF__DK_INT, .compute = CLF_I64,
                 .cl_storage = "long", .cl_value = "long",
                 .load = "$b[$i]", .load_vec = "vload$w(0, $b + $i)",
                 .load_vec_aligned = "*(const __global long$w *)($b + $i)",
                 .store = "$b[$i] = $v", .store_vec = "vstore$w($v, 0, $b + $i)",
                 .store_vec_aligned = "*(__global long$w *)($b + $i) = $v",
                 .get_f64 = i64_get, .get_i64 = i64_get_i, .put_f64 = i64_put, .put_i64 = i64_put_i,
                 .onnx_type = 7, .onnx_name = "int64", .npy_descr = "<i8"},
    [CLF_F16] = {.name = "f16", .size = 2, .kind = CLF__DK_FLOAT, .compute = CLF_F32,
                 .cl_storage = "half", .cl_value = "float",
                 .load = "vload_half($i, $b)", .load_vec = "vload_half$w(0, $b + $i)",
                 .load_vec_aligned = "clf_f16_float$w(convert_uint$w(*(const __global ushort$w *)($b + $i)))",
                 .store = "vstore_half_rte($v, $i, $b)", .store_vec = "vstore_half$w_rte($v, 0, $b + $i)",
                 .store_vec_aligned = "vstorea_half$w_rte($v, 0, $b + $i)",
                 .round_fn = "clf_round_f16",
                 .get_f64 = f16_get, .get_i64 = f16_get_i, .put_f64 = f16_put, .put_i64 = f16_put_i,
                 .onnx_type = 10, .onnx_name = "float16", .npy_descr = "<f2"},
    [CLF_BF16] = {.name = "bf16", .size = 2, .kind = CLF__DK_FLOAT, .compute = CLF_F32,
                  .cl_storage = "ushort", .cl_value = "float",
                  .load = "as_float((uint)$b[$i] << 16)",
                  .load_vec = "as_float$w(convert_uint$w(vload$w(0, $b + $i)) << 16)",
                  .load_vec_aligned = "as_float$w(convert_uint$w(*(const __global ushort$w *)($b + $i)) << 16)",
                  .store = "$b[$i] = clf_bf16_bits($v)",
                  .store_vec = "vstore$w(convert_ushort$w(as_uint$w($v) >> 16), 0, $b + $i)",
                  .store_vec_aligned = "*(__global ushort$w *)($b + $i) = convert_ushort$w(as_uint$w($v) >> 16)",
                  .round_fn = "clf_round_bf16",
                  .get_f64 = bf16_get, .get_i64 = bf16_get_i, .put_f64 = bf16_put, .put_i64 = bf16_put_i,
                  .onnx_type = 16, .onnx_name = "bfloat16", .npy_descr = "<u2"},
};

bool clf__dtype_from_onnx(int onnx_type, clf_dtype *out)
{
    for (int d = 0; d < CLF_DTYPE_COUNT; d++)
        if (clf__dtype_table[d].onnx_type == onnx_type) {
            *out = (clf_dtype)d;
            return true;
        }
    return false;
}

bool clf__dtype_from_npy(const char *descr, clf_dtype *out)
{
    for (int d = 0; d < CLF_DTYPE_COUNT; d++)
        if (strcmp(clf__dtype_table[d].npy_descr, descr) == 0) {
            *out = (clf_dtype)d;
            return true;
        }
    return false;
}
