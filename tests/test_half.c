/* Suite "half": the f16 (IEEE binary16) and bf16 (bfloat16) storage dtypes.
 *
 * f16 and bf16 are storage types: kernels load them into f32, compute in
 * f32 and round each f16/bf16 node's value to nearest even; the reference
 * interpreter computes in double, rounds to f32, then to the storage type.
 * So ops that are exact in f32 (add, sub, mul of two f16 or bf16 values,
 * neg, abs, relu, floor, ceil, sign, maximum, minimum, comparisons, where,
 * clip, casts, movement ops, concat, gather) must match the reference bit
 * for bit, fused and unfused; the others (exp, tanh, div, pow, ...) within
 * two ulps of the storage type. Reductions, GEMM and the composites
 * accumulate in f32 and round once.
 *
 * Inputs are random with the values that break half planted among them:
 * 65504 (the f16 maximum), subnormals, the smallest subnormal, -0, NaN,
 * +-inf, and operand pairs whose f32 result is a rounding tie or crosses
 * the overflow threshold (65504 + 16 = 65520 rounds to inf). Where a value
 * is known without the reference, it is checked against its bit pattern
 * as well, so that the reference itself is under test.
 *
 * Every graph runs fused in both template forms (CPU and GPU forced on the
 * CPU device), and with fusion off where that builds kernels no other
 * case builds: every pointwise op of the op table runs unfused in one of
 * the two dtypes (the unary ones in bf16, the binary ones in f16), and so
 * do the float casts, a GEMM with its epilogue per dtype, K = 0, the split
 * reductions and the million-element sums. PoCL builds an f32 kernel in
 * about 0.4 s, an f16 one in 1.2 s (vstore_half_rte) and a bf16 one in
 * 0.75 s, so ops of one shape share a graph; the suite takes about 3.5
 * minutes of CPU. */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "graph/op_table.h"
#include "planner/planner.h"
#include "runtime/driver_quirks.h"
#include "runtime/runtime_internal.h"
#include "test_e2e.h"
#include "test_support.h"

/* The two storage dtypes every case runs over. */
static const clf_dtype HALF_DTYPES[2] = {CLF_F16, CLF_BF16};

/* Two ulps of the storage type, relative: 2 * 2^-10 for f16 (11-bit
 * significand), 2 * 2^-7 for bf16 (8 bits). */
static double half_rtol(clf_dtype dt) { return dt == CLF_F16 ? 2e-3 : 1.6e-2; }
/* Two ulps of the smallest subnormal for f16 (results below 2^-14 are
 * spaced 2^-24 apart); for bf16, whose subnormals are f32's, the smallest
 * normal f32, so that an f32 library that flushes a subnormal result to 0
 * is still within tolerance. */
static double half_atol(clf_dtype dt) { return dt == CLF_F16 ? 0x1p-23 : 0x1p-126; }
/* One ulp relative (for sums against an f64 value). */
static double half_ulp_at(clf_dtype dt, double v)
{
    if (v == 0 || !isfinite(v))
        return 0;
    int e;
    frexp(fabs(v), &e); /* |v| in [2^(e-1), 2^e) */
    int bits = dt == CLF_F16 ? 11 : 8;
    double ulp = ldexp(1.0, e - bits);
    double min_ulp = dt == CLF_F16 ? 0x1p-24 : 0x1p-133;
    return ulp > min_ulp ? ulp : min_ulp;
}

static uint16_t half_bits(clf_dtype dt, float v) { return dt == CLF_F16 ? clf_test_to_f16(v) : clf_test_to_bf16(v); }
static double half_value(clf_dtype dt, uint16_t h)
{
    return dt == CLF_F16 ? (double)clf_test_from_f16(h) : (double)clf_test_from_bf16(h);
}
static bool half_isnan(clf_dtype dt, uint16_t h) { return isnan(half_value(dt, h)); }

/* Special values of each storage type, planted at the start of general
 * inputs: largest finite, smallest subnormal, largest subnormal, smallest
 * normal, signed zeros, NaNs, infinities, 1 + 1 ulp, halves (floor, ceil
 * and sign of -0.5), 2.5, and one more (f16: 65502, the value below the
 * maximum; bf16: 65536, 65504 rounded to bf16). */
static const uint16_t F16_SPECIAL[] = {
    0x7bff, 0xfbff, 0x0001, 0x8001, 0x03ff, 0x0400, 0x8000, 0x0000, 0x7e00, 0xfe00,
    0x7c00, 0xfc00, 0x3c01, 0x3c00, 0xbc00, 0x3800, 0xb800, 0x4100, 0xc100, 0x7bfe,
};
static const uint16_t BF16_SPECIAL[] = {
    0x7f7f, 0xff7f, 0x0001, 0x8001, 0x007f, 0x0080, 0x8000, 0x0000, 0x7fc0, 0xffc0,
    0x7f80, 0xff80, 0x3f81, 0x3f80, 0xbf80, 0x3f00, 0xbf00, 0x4020, 0xc020, 0x4780,
};
enum { N_SPECIAL = 20 };
static_assert(sizeof F16_SPECIAL / sizeof F16_SPECIAL[0] == N_SPECIAL, "one table length");
static_assert(sizeof BF16_SPECIAL / sizeof BF16_SPECIAL[0] == N_SPECIAL, "one table length");
/* Indices into the tables above. */
enum { SP_MAX, SP_NMAX, SP_TINY, SP_NTINY, SP_SUBMAX, SP_NORMMIN, SP_NZERO, SP_ZERO, SP_NAN, SP_NNAN,
       SP_INF, SP_NINF, SP_ONE_ULP, SP_ONE, SP_NONE, SP_HALF, SP_NHALF, SP_2_5, SP_N2_5, SP_EXTRA };

static const uint16_t *specials(clf_dtype dt) { return dt == CLF_F16 ? F16_SPECIAL : BF16_SPECIAL; }

/* Special values for operands of log, sqrt, rsqrt and pow's base: NaN,
 * +inf, +0, the smallest subnormal, the largest finite, the smallest
 * normal, 1, the largest subnormal. */
static void plant_positive(clf_dtype dt, uint16_t *p)
{
    const uint16_t *s = specials(dt);
    const int idx[] = {SP_NAN, SP_INF, SP_ZERO, SP_TINY, SP_MAX, SP_NORMMIN, SP_ONE, SP_SUBMAX};
    for (size_t i = 0; i < sizeof idx / sizeof idx[0]; i++)
        p[i] = s[idx[i]];
}

/* Whether an op's fuzz domain says its f32 result of two exactly stored
 * operands is exact (so a storage-type result is one rounding of the true
 * value, the same in the kernel and the reference). */
static bool domain_is_exact(clf__fuzz_domain d)
{
    switch (d) {
    case CLF__FUZZ_NEGATE:
    case CLF__FUZZ_NONNEG:
    case CLF__FUZZ_STEP:
    case CLF__FUZZ_SIGN:
    case CLF__FUZZ_SUM:
    case CLF__FUZZ_DIFFERENCE:
    case CLF__FUZZ_PRODUCT:
    case CLF__FUZZ_SELECT:
    case CLF__FUZZ_COMPARE:
    case CLF__FUZZ_LOGIC:
    case CLF__FUZZ_PREDICATE:
        return true;
    default:
        return false;
    }
}

/* Operands that must be positive to mean anything (log, sqrt, rsqrt). */
static bool domain_is_positive(clf__fuzz_domain d)
{
    return d == CLF__FUZZ_LOG || d == CLF__FUZZ_SQRT || d == CLF__FUZZ_RSQRT;
}

static void assert_bits(const e2e_run *r, const char *out, size_t i, uint16_t want)
{
    uint16_t got = ((const uint16_t *)e2e_got(r, out))[i];
    ck_assert_msg(got == want, "%s[%zu] = 0x%04x, want 0x%04x", out, i, (unsigned)got, (unsigned)want);
}

static void assert_nan(const e2e_run *r, clf_dtype dt, const char *out, size_t i)
{
    uint16_t got = ((const uint16_t *)e2e_got(r, out))[i];
    ck_assert_msg(half_isnan(dt, got), "%s[%zu] = 0x%04x, want NaN", out, i, (unsigned)got);
}

/* Runs g against the reference fused (default, CPU and GPU forms forced)
 * and, when unfused is set, with fusion off; the fused plan has
 * want_kernels kernels (E2E_ANY_KERNELS: any) in every form. Fills *r with
 * the fused results when r is not NULL (free with e2e_run_free).
 *
 * Every graph is checked in both forms; fusion off is asked for where it
 * adds kernels no other case builds (each f16 kernel costs PoCL about
 * 1.2 s to build, each bf16 one 0.75 s). */
static void check_half(const clf_graph *g, const e2e_inputs *in, bool unfused, size_t want_kernels, double rtol,
                       double atol, const e2e_tol *tols, e2e_run *r)
{
    clf_context *ctx = clf_test_context();
    e2e_run local;
    if (!r)
        r = &local;
    e2e_check(ctx, g, in, rtol, atol, tols, unfused ? E2E_BOTH : E2E_FUSED, r);
    size_t want = want_kernels == E2E_ANY_KERNELS ? r->kernels : want_kernels;
    ck_assert_uint_eq(r->kernels, want);
    if (unfused)
        ck_assert_uint_eq(r->unfused_kernels, r->stats.unfused_kernels);
    ck_assert_uint_eq(e2e_check_style_tols(ctx, g, in, CLF_KERNEL_STYLE_CPU, rtol, atol, tols), want);
    ck_assert_uint_eq(e2e_check_style_tols(ctx, g, in, CLF_KERNEL_STYLE_GPU, rtol, atol, tols), want);
    if (r == &local)
        e2e_run_free(r);
    clf_context_destroy(&ctx);
}

/* ---- Host conversions ---------------------------------------------------- */

/* ck_assert_msg for loops of millions: Check's assertions report each
 * passing check to the parent process, which costs a system call. */
#define FAST_CHECK(cond, ...)                                                                      \
    do {                                                                                           \
        if (!(cond))                                                                               \
            ck_abort_msg(__VA_ARGS__);                                                             \
    } while (0)

static float f32_of_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static uint32_t bits_of_f32(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

START_TEST(dtype_names_and_sizes)
{
    ck_assert_int_eq(CLF_F16, 4);
    ck_assert_int_eq(CLF_BF16, 5);
    ck_assert_str_eq(clf_dtype_name(CLF_F16), "f16");
    ck_assert_str_eq(clf_dtype_name(CLF_BF16), "bf16");
    ck_assert_uint_eq(clf_dtype_size(CLF_F16), 2);
    ck_assert_uint_eq(clf_dtype_size(CLF_BF16), 2);
    /* An f16 input keeps its dtype; a comparison of two gives bool. */
    int64_t n = 3;
    for (int d = 0; d < 2; d++) {
        clf_graph *g = clf_graph_create();
        clf_tensor x = clf_input(g, "x", HALF_DTYPES[d], 1, &n);
        clf_dtype dt = CLF_F32;
        ck_assert_int_eq(clf_tensor_dtype(g, x, &dt), CLF_OK);
        ck_assert_int_eq(dt, HALF_DTYPES[d]);
        ck_assert_int_eq(clf_tensor_dtype(g, clf_lt(g, x, x), &dt), CLF_OK);
        ck_assert_int_eq(dt, CLF_BOOL);
        ck_assert_int_eq(clf_tensor_dtype(g, clf_exp(g, x), &dt), CLF_OK);
        ck_assert_int_eq(dt, HALF_DTYPES[d]);
        ck_assert_int_eq(clf_graph_status(g, NULL), CLF_OK);
        clf_graph_destroy(&g);
    }
}
END_TEST

/* The tests' own conversions (test_support.c) against known patterns, so
 * that the checks below that use them rest on something. */
START_TEST(test_helpers_convert_and_compare_half)
{
    ck_assert_uint_eq(clf_test_to_f16(1.0f), 0x3c00);
    ck_assert_uint_eq(clf_test_to_f16(65504.0f), 0x7bff);
    ck_assert_uint_eq(clf_test_to_f16(65519.0f), 0x7bff);
    ck_assert_uint_eq(clf_test_to_f16(65520.0f), 0x7c00);
    ck_assert_uint_eq(clf_test_to_f16(0x1p-24f), 0x0001);
    ck_assert_uint_eq(clf_test_to_f16(0x1p-25f), 0x0000);
    ck_assert_uint_eq(clf_test_to_f16(0x1.8p-24f), 0x0002);
    ck_assert_uint_eq(clf_test_to_f16(1.0f + 0x1p-11f), 0x3c00);
    ck_assert_uint_eq(clf_test_to_f16(1.0f + 0x3p-11f), 0x3c02);
    ck_assert_uint_eq(clf_test_to_f16(-0.0f), 0x8000);
    ck_assert_uint_eq(clf_test_to_bf16(1.0f), 0x3f80);
    ck_assert_uint_eq(clf_test_to_bf16(1.0f + 0x1p-8f), 0x3f80);
    ck_assert_uint_eq(clf_test_to_bf16(1.0f + 0x3p-8f), 0x3f82);
    ck_assert(clf_test_from_f16(0x7bff) == 65504.0f && clf_test_from_f16(0x0001) == 0x1p-24f);
    ck_assert(clf_test_from_f16(0x7c00) == INFINITY && isnan(clf_test_from_f16(0x7e00)));
    ck_assert(clf_test_from_bf16(0x3f80) == 1.0f && signbit(clf_test_from_f16(0x8000)));
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = clf_test_from_f16((uint16_t)h);
        if (!isnan(f))
            FAST_CHECK(clf_test_to_f16(f) == h, "clf_test_to_f16(%a) != 0x%04x", (double)f, h);
        f = clf_test_from_bf16((uint16_t)h);
        if (!isnan(f))
            FAST_CHECK(clf_test_to_bf16(f) == h, "clf_test_to_bf16(%a) != 0x%04x", (double)f, h);
    }
    /* clf_test_close: NaN matches NaN, infinities exactly, bits at 0 tolerance. */
    char why[256];
    uint16_t a[3] = {0x7e00, 0x7c00, 0x8000}, b[3] = {0x7e01, 0x7c00, 0x8000}, c[3] = {0x7e00, 0x7bff, 0x8000};
    uint16_t z[1] = {0x0000}, nz[1] = {0x8000};
    ck_assert(clf_test_close(CLF_F16, a, b, 3, 0, 0, why, sizeof why));
    ck_assert(!clf_test_close(CLF_F16, c, b, 3, 1e-2, 0, why, sizeof why)); /* 65504 is not inf */
    ck_assert(!clf_test_close(CLF_F16, z, nz, 1, 0, 0, why, sizeof why));   /* +0 is not -0, bitwise */
    ck_assert(clf_test_close(CLF_F16, z, nz, 1, 1e-3, 0, why, sizeof why)); /* but is by value */
    uint16_t n1[1] = {0x3c00}, n2[1] = {0x3c01};
    ck_assert(clf_test_close(CLF_F16, n1, n2, 1, 1e-3, 0, why, sizeof why));
    ck_assert(!clf_test_close(CLF_F16, n1, n2, 1, 0, 0, why, sizeof why));
    ck_assert(!clf_test_close(CLF_BF16, n1, n2, 1, 1e-3, 0, why, sizeof why)); /* 0x3c01 in bf16: 1 ulp is 2^-7 relative */
}
END_TEST

/* clf_f16_from_f32 and friends against known bit patterns, then against
 * the tests' own conversions on every f16/bf16 pattern and on f32 patterns
 * around every rounding point. */
START_TEST(host_conversions_known_bits)
{
    /* f16 <- f32 */
    static const struct { float x; uint16_t h; } f16_cases[] = {
        {1.0f, 0x3c00}, {-1.0f, 0xbc00}, {65504.0f, 0x7bff}, {-65504.0f, 0xfbff},
        {65519.0f, 0x7bff}, {65519.996f, 0x7bff}, {65520.0f, 0x7c00}, {-65520.0f, 0xfc00},
        {1e5f, 0x7c00}, {-1e5f, 0xfc00}, {INFINITY, 0x7c00}, {-INFINITY, 0xfc00},
        {0x1p-24f, 0x0001}, {6e-8f, 0x0001}, {5.96e-8f, 0x0001}, {-0x1p-24f, 0x8001},
        {0x1p-25f, 0x0000}, {-0x1p-25f, 0x8000}, {0x1.000002p-25f, 0x0001}, {0x1.8p-24f, 0x0002},
        {0x1.4p-23f, 0x0002}, {0x1p-14f, 0x0400}, {0x1.ffcp-15f, 0x0400}, {0x1.ff8p-15f, 0x03ff}, {0x1.ff0p-15f, 0x03fe},
        {0.0f, 0x0000}, {-0.0f, 0x8000}, {1e-30f, 0x0000}, {0x1p-149f, 0x0000},
        {1.0f + 0x1p-11f, 0x3c00}, {1.0f + 0x3p-11f, 0x3c02}, {0x1.002002p+0f, 0x3c01},
        {2049.0f, 0x6800}, {2051.0f, 0x6802}, {0.5f, 0x3800}, {65536.0f, 0x7c00},
    };
    for (size_t i = 0; i < sizeof f16_cases / sizeof f16_cases[0]; i++) {
        uint16_t h = clf_f16_from_f32(f16_cases[i].x);
        ck_assert_msg(h == f16_cases[i].h, "clf_f16_from_f32(%a) = 0x%04x, want 0x%04x", (double)f16_cases[i].x,
                      (unsigned)h, (unsigned)f16_cases[i].h);
        ck_assert_uint_eq(clf_test_to_f16(f16_cases[i].x), f16_cases[i].h);
    }
    /* NaN: a quiet NaN of the same sign, whatever the payload (a signaling
     * NaN whose payload lies in the dropped bits must not become inf). */
    static const uint32_t nans[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u, 0x7fbfffffu, 0x7f802000u};
    for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++) {
        uint16_t h = clf_f16_from_f32(f32_of_bits(nans[i]));
        ck_assert_msg((h & 0x7c00u) == 0x7c00u && (h & 0x0200u) != 0, "f16 of NaN 0x%08x is 0x%04x", nans[i],
                      (unsigned)h);
        ck_assert_uint_eq(h >> 15, nans[i] >> 31);
        uint16_t b = clf_bf16_from_f32(f32_of_bits(nans[i]));
        ck_assert_msg((b & 0x7f80u) == 0x7f80u && (b & 0x0040u) != 0, "bf16 of NaN 0x%08x is 0x%04x", nans[i],
                      (unsigned)b);
        ck_assert_uint_eq(b >> 15, nans[i] >> 31);
    }
    /* f32 <- f16 */
    static const struct { uint16_t h; float x; } f32_cases[] = {
        {0x3c00, 1.0f}, {0x7bff, 65504.0f}, {0x0001, 0x1p-24f}, {0x03ff, 0x1.ff8p-15f}, {0x0400, 0x1p-14f},
        {0x7c00, INFINITY}, {0xfc00, -INFINITY}, {0xc000, -2.0f}, {0x3555, 0x1.554p-2f}, {0x3c01, 1.0f + 0x1p-10f},
    };
    for (size_t i = 0; i < sizeof f32_cases / sizeof f32_cases[0]; i++) {
        float x = clf_f32_from_f16(f32_cases[i].h);
        ck_assert_msg(x == f32_cases[i].x, "clf_f32_from_f16(0x%04x) = %a, want %a", (unsigned)f32_cases[i].h,
                      (double)x, (double)f32_cases[i].x);
    }
    ck_assert(signbit(clf_f32_from_f16(0x8000)) && clf_f32_from_f16(0x8000) == 0.0f);
    ck_assert(isnan(clf_f32_from_f16(0x7e00)) && isnan(clf_f32_from_f16(0x7c01)) && isnan(clf_f32_from_f16(0xfe00)));
    ck_assert(signbit(clf_f32_from_f16(0xfe00)));

    /* bf16 <- f32, f32 <- bf16 */
    const struct { float x; uint16_t h; } bf16_cases[] = {
        {1.0f, 0x3f80}, {-1.0f, 0xbf80}, {INFINITY, 0x7f80}, {-INFINITY, 0xff80}, {0.0f, 0x0000}, {-0.0f, 0x8000},
        {1.0f + 0x1p-8f, 0x3f80}, {1.0f + 0x3p-8f, 0x3f82}, {0x1.010002p+0f, 0x3f81}, {65504.0f, 0x4780},
        {3.3895314e38f, 0x7f7f}, {0x1p-133f, 0x0001}, {0x1p-134f, 0x0000}, {0x1.8p-133f, 0x0002},
        {f32_of_bits(0x7f7fffffu), 0x7f80}, /* FLT_MAX rounds up to inf */
        {f32_of_bits(0x7f7f7fffu), 0x7f7f}, {f32_of_bits(0x7f7f8000u), 0x7f80}, {f32_of_bits(0x3f818000u), 0x3f82},
    };
    for (size_t i = 0; i < sizeof bf16_cases / sizeof bf16_cases[0]; i++) {
        uint16_t h = clf_bf16_from_f32(bf16_cases[i].x);
        ck_assert_msg(h == bf16_cases[i].h, "clf_bf16_from_f32(%a) = 0x%04x, want 0x%04x", (double)bf16_cases[i].x,
                      (unsigned)h, (unsigned)bf16_cases[i].h);
        ck_assert_uint_eq(clf_test_to_bf16(bf16_cases[i].x), bf16_cases[i].h);
    }
    ck_assert(clf_f32_from_bf16(0x3f80) == 1.0f);
    ck_assert(clf_f32_from_bf16(0x7f80) == INFINITY);
    ck_assert(isnan(clf_f32_from_bf16(0x7fc0)) && isnan(clf_f32_from_bf16(0x7f81)));

    /* Every pattern: widening is exact, and narrowing it back gives it again. */
    for (uint32_t h = 0; h < 0x10000; h++) {
        float x = clf_f32_from_f16((uint16_t)h), mine = clf_test_from_f16((uint16_t)h);
        if (isnan(mine)) {
            FAST_CHECK(isnan(x), "clf_f32_from_f16(0x%04x) = %a, want NaN", h, (double)x);
            FAST_CHECK(half_isnan(CLF_F16, clf_f16_from_f32(x)), "NaN 0x%04x does not stay NaN", h);
        } else {
            FAST_CHECK(bits_of_f32(x) == bits_of_f32(mine), "clf_f32_from_f16(0x%04x) = %a, want %a", h, (double)x,
                          (double)mine);
            FAST_CHECK(clf_f16_from_f32(x) == h, "clf_f16_from_f32(%a) = 0x%04x, want 0x%04x", (double)x,
                          (unsigned)clf_f16_from_f32(x), h);
        }
        x = clf_f32_from_bf16((uint16_t)h);
        if (isnan(clf_test_from_bf16((uint16_t)h))) {
            FAST_CHECK(isnan(x), "clf_f32_from_bf16(0x%04x) = %a, want NaN", h, (double)x);
        } else {
            FAST_CHECK(bits_of_f32(x) == h << 16, "clf_f32_from_bf16(0x%04x) has bits 0x%08x", h, bits_of_f32(x));
            FAST_CHECK(clf_bf16_from_f32(x) == h, "clf_bf16_from_f32(%a) = 0x%04x, want 0x%04x", (double)x,
                          (unsigned)clf_bf16_from_f32(x), h);
        }
    }
    /* f32 patterns at every f16 rounding point: the 20 high bits (sign,
     * exponent, the 11 high mantissa bits: f16's 10 and the rounding bit)
     * with low bits that make a tie, just above and just below. */
    static const uint32_t low12[] = {0x000u, 0x001u, 0x800u, 0xfffu};
    for (uint32_t hi = 0; hi < (1u << 20); hi++)
        for (int l = 0; l < 4; l++) {
            uint32_t u = hi << 12 | low12[l];
            float x = f32_of_bits(u);
            if (isnan(x))
                continue;
            uint16_t got = clf_f16_from_f32(x), want = clf_test_to_f16(x);
            FAST_CHECK(got == want, "clf_f16_from_f32(%a) (bits 0x%08x) = 0x%04x, want 0x%04x", (double)x, u,
                          (unsigned)got, (unsigned)want);
        }
    static const uint32_t low16[] = {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu};
    for (uint32_t hi = 0; hi < (1u << 16); hi++)
        for (int l = 0; l < 6; l++) {
            uint32_t u = hi << 16 | low16[l];
            float x = f32_of_bits(u);
            if (isnan(x))
                continue;
            uint16_t got = clf_bf16_from_f32(x), want = clf_test_to_bf16(x);
            FAST_CHECK(got == want, "clf_bf16_from_f32(%a) (bits 0x%08x) = 0x%04x, want 0x%04x", (double)x, u,
                          (unsigned)got, (unsigned)want);
        }
}
END_TEST

/* ---- Pointwise ops of the op table ------------------------------------------ */

static const int64_t S_PW[2] = {7, 19}; /* 133 elements: vector loops and their tails */

/* Every unary row of the op table that takes f32 operands, on dt: exact
 * ones bit for bit, the others within two ulps. Positive-domain ops (log,
 * sqrt, rsqrt) see positive inputs, and, fused, the general ones as well.
 * One kernel fused; with unfused, one per op as well. */
static void check_unary_ops(clf_dtype dt, bool unfused)
{
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor x = e2e_input(g, &in, "x", dt, 2, S_PW, -3.0, 3.0);
    clf_tensor p = e2e_input(g, &in, "p", dt, 2, S_PW, 0.05, 6.0);
    uint16_t *xd = e2e_data(&in, "x"), *pd = e2e_data(&in, "p");
    memcpy(xd, specials(dt), N_SPECIAL * sizeof *xd);
    memcpy(xd + 120, specials(dt), 13 * sizeof *xd); /* and in the scalar tail */
    plant_positive(dt, pd);
    e2e_tol tols[2 * CLF_UNARY_COUNT + 1];
    size_t ntol = 0, nout = 0;
    static char names[2 * CLF_UNARY_COUNT][40];
    for (int u = 0; u < CLF_UNARY_COUNT; u++) {
        const clf__op_info *info = clf__op_info_of(clf__op_of_unary((clf_unary_op)u));
        if (!(info->dtypes & CLF__DTM_F32) || info->cls != CLF__CLASS_POINTWISE)
            continue; /* not an op of float operands */
        bool positive = domain_is_positive(info->fuzz);
        for (int on_x = 0; on_x < (positive && !unfused ? 2 : 1); on_x++) {
            snprintf(names[nout], sizeof names[nout], "%s%s", info->name, on_x ? "_x" : "");
            clf_tensor y = clf_unary(g, (clf_unary_op)u, positive && !on_x ? p : x);
            const char *why = "";
            clf_graph_status(g, &why);
            ck_assert_msg(clf_tensor_valid(y), "%s of %s refused: %s", info->name, clf_dtype_name(dt), why);
            clf_dtype ydt;
            ck_assert_int_eq(clf_tensor_dtype(g, y, &ydt), CLF_OK);
            ck_assert_int_eq(ydt, info->rule == CLF__DT_BOOL ? CLF_BOOL : dt);
            ck_assert_int_eq(clf_graph_output(g, names[nout], y), CLF_OK);
            if (!domain_is_exact(info->fuzz))
                tols[ntol++] = (e2e_tol){names[nout], half_rtol(dt), half_atol(dt)};
            nout++;
        }
    }
    tols[ntol] = (e2e_tol){NULL, 0, 0};
    const char *msg = "";
    ck_assert_msg(clf_graph_status(g, &msg) == CLF_OK, "%s", msg);
    e2e_run r;
    check_half(g, &in, unfused, 1, 0, 0, tols, &r);
    ck_assert_uint_eq(r.n, nout);
    ck_assert_uint_eq(r.stats.unfused_kernels, nout);
    /* Values known without the reference. */
    const uint16_t *s = specials(dt);
    const uint16_t one = s[SP_ONE], none = s[SP_NONE], inf = s[SP_INF];
    assert_bits(&r, "neg", SP_MAX, s[SP_NMAX]);
    assert_bits(&r, "neg", SP_ZERO, 0x8000);
    assert_bits(&r, "neg", SP_TINY, s[SP_NTINY]);
    assert_bits(&r, "abs", SP_NZERO, 0x0000);
    assert_bits(&r, "abs", SP_NINF, inf);
    assert_bits(&r, "relu", SP_NMAX, 0x0000);
    assert_bits(&r, "relu", SP_TINY, s[SP_TINY]);
    assert_nan(&r, dt, "relu", SP_NAN);
    assert_bits(&r, "floor", SP_NHALF, none);
    assert_bits(&r, "ceil", SP_NHALF, 0x8000); /* ceil(-0.5) = -0 */
    assert_bits(&r, "floor", SP_2_5, half_bits(dt, 2.0f));
    assert_bits(&r, "ceil", SP_TINY, one);
    assert_bits(&r, "sign", SP_NMAX, none);
    assert_bits(&r, "sign", SP_TINY, one);
    assert_bits(&r, "sign", SP_NZERO, 0x8000);
    assert_bits(&r, "exp", SP_MAX, inf);
    assert_bits(&r, "exp", SP_NINF, 0x0000);
    assert_bits(&r, "exp", SP_ZERO, one);
    assert_bits(&r, "tanh", SP_MAX, one);
    assert_bits(&r, "sqrt", 1, inf);   /* p[1] = +inf */
    assert_bits(&r, "sqrt", 2, 0x0000); /* p[2] = +0 */
    assert_bits(&r, "log", 6, 0x0000); /* log(1) */
    assert_bits(&r, "log", 2, s[SP_NINF]);
    assert_bits(&r, "reciprocal", SP_NZERO, s[SP_NINF]);
    if (dt == CLF_F16)
        assert_bits(&r, "reciprocal", SP_TINY, inf); /* 2^24 overflows f16 */
    if (!unfused)
        assert_nan(&r, dt, "sqrt_x", SP_NONE);
    const uint8_t *isn = e2e_got(&r, "isnan");
    ck_assert(isn[SP_NAN] == 1 && isn[SP_NNAN] == 1 && isn[SP_INF] == 0 && isn[SP_TINY] == 0);
    e2e_run_free(&r);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}

/* Fused in f16; fused and unfused in bf16 (the binary ops go the other way
 * round): every op runs unfused in one of the two types. */
START_TEST(every_float_unary_op_f16)
{
    check_unary_ops(CLF_F16, false);
}
END_TEST

START_TEST(every_float_unary_op_bf16)
{
    check_unary_ops(CLF_BF16, true);
}
END_TEST

/* Operand pairs planted at the start of the binary inputs, with what add
 * or mul must give (checked by bits, without the reference). */
typedef struct pair_case {
    uint16_t a, b;
    const char *op;
    uint16_t want;
} pair_case;

static const pair_case F16_PAIRS[] = {
    {0x7bff, 0x4c00, "add", 0x7c00}, /* 65504 + 16 = 65520: a tie, to even, which is inf */
    {0x7bff, 0x4b80, "add", 0x7bff}, /* 65504 + 15 = 65519 */
    {0x3c00, 0x1000, "add", 0x3c00}, /* 1 + 2^-11: a tie, to even */
    {0x3c01, 0x1000, "add", 0x3c02}, /* 1 + 3 * 2^-11: a tie, to even (up) */
    {0x5c00, 0x5c00, "mul", 0x7c00}, /* 256 * 256 */
    {0x0c00, 0x0c00, "mul", 0x0001}, /* 2^-12 * 2^-12 = the smallest subnormal */
    {0x0c00, 0x0800, "mul", 0x0000}, /* 2^-25: a tie, to even (0) */
    {0x0e00, 0x0c00, "mul", 0x0002}, /* 1.5 * 2^-24: a tie, to even (2) */
    {0x0a00, 0x0c00, "mul", 0x0001}, /* 0.75 * 2^-24 */
    {0x7bff, 0x7bff, "mul", 0x7c00}, /* finite in f32, inf in f16 */
    {0x7bff, 0xcc00, "sub", 0x7c00}, /* 65504 - -16 */
    {0x0001, 0x0001, "add", 0x0002},
    {0x0001, 0x8001, "add", 0x0000},
    {0x3c00, 0x0000, "div", 0x7c00},
    {0x7e00, 0x0000, "maximum", 0x7e00}, /* NaN propagates: checked as NaN */
    {0x0000, 0x7e00, "minimum", 0x7e00},
    {0x7c00, 0xfc00, "add", 0x7e00},
    {0x8000, 0x8000, "add", 0x8000}, /* -0 + -0 = -0 */
};
static const pair_case BF16_PAIRS[] = {
    {0x7f7f, 0x7f7f, "add", 0x7f80}, /* overflow */
    {0x7f7f, 0x7b00, "add", 0x7f80}, /* max + 2^119: exact in f32, a tie in bf16, to even: inf */
    {0x3f80, 0x3b80, "add", 0x3f80}, /* 1 + 2^-8: a tie, to even */
    {0x3f81, 0x3b80, "add", 0x3f82}, /* 1 + 3 * 2^-8: a tie, to even (up) */
    {0x5f80, 0x5f80, "mul", 0x7f80}, /* 2^64 * 2^64 */
    {0x3f81, 0x3f81, "mul", 0x3f82}, /* (1 + 2^-7)^2 = 1 + 2^-6 + 2^-14 */
    {0x1f80, 0x1f80, "mul", 0x0020}, /* 2^-64 * 2^-64 = 2^-128, subnormal */
    {0x3f80, 0x3b00, "sub", 0x3f80}, /* 1 - 2^-9: rounds back to 1 */
    {0x0001, 0x0001, "add", 0x0002},
    {0x0001, 0x8001, "add", 0x0000},
    {0x3f80, 0x0000, "div", 0x7f80},
    {0x7fc0, 0x0000, "maximum", 0x7fc0},
    {0x0000, 0x7fc0, "minimum", 0x7fc0},
    {0x7f80, 0xff80, "add", 0x7fc0},
    {0x8000, 0x8000, "add", 0x8000},
    {0x4780, 0x3f80, "add", 0x4780}, /* 65536 + 1 = 65536 in bf16 */
    {0x437f, 0x3f00, "add", 0x4380}, /* 255 + 0.5 = 255.5: a tie, to even: 256 */
    {0x4380, 0x3f80, "add", 0x4380}, /* 256 + 1 = 257: a tie, to even: 256 */
};
enum { N_PAIRS = 18 };
static_assert(sizeof F16_PAIRS / sizeof F16_PAIRS[0] == N_PAIRS, "one table length");
static_assert(sizeof BF16_PAIRS / sizeof BF16_PAIRS[0] == N_PAIRS, "one table length");

/* Every binary row of the op table that takes f32 operands, on dt, with
 * the pairs above and equal operands (for the comparisons) planted, and
 * two broadcasts (a row, a column). One kernel fused; with unfused, one per
 * op as well. */
static void check_binary_ops(clf_dtype dt, bool unfused)
{
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor a = e2e_input(g, &in, "a", dt, 2, S_PW, -3.0, 3.0);
    clf_tensor b = e2e_input(g, &in, "b", dt, 2, S_PW, -3.0, 3.0);
    clf_tensor p = e2e_input(g, &in, "p", dt, 2, S_PW, 0.1, 4.0);
    int64_t srow[1] = {S_PW[1]}, scol[2] = {S_PW[0], 1};
    clf_tensor row = e2e_input(g, &in, "row", dt, 1, srow, -3.0, 3.0);
    clf_tensor col = e2e_input(g, &in, "col", dt, 2, scol, -3.0, 3.0);
    uint16_t *ad = e2e_data(&in, "a"), *bd = e2e_data(&in, "b"), *pd = e2e_data(&in, "p");
    const pair_case *pairs = dt == CLF_F16 ? F16_PAIRS : BF16_PAIRS;
    for (int i = 0; i < N_PAIRS; i++) {
        ad[i] = pairs[i].a;
        bd[i] = pairs[i].b;
    }
    for (int i = 0; i < N_SPECIAL; i++) { /* specials against random values, both ways */
        ad[40 + i] = specials(dt)[i];
        bd[80 + i] = specials(dt)[i];
    }
    for (int i = 101; i < 133; i += 3)
        bd[i] = ad[i]; /* equal operands */
    plant_positive(dt, pd);
    e2e_tol tols[CLF_BINARY_COUNT + 3];
    size_t ntol = 0, nout = 0;
    for (int o = 0; o < CLF_BINARY_COUNT; o++) {
        const clf__op_info *info = clf__op_info_of(clf__op_of_binary((clf_binary_op)o));
        if (!(info->dtypes & CLF__DTM_F32) || info->cls != CLF__CLASS_POINTWISE)
            continue;
        clf_tensor y = clf_binary(g, (clf_binary_op)o, info->fuzz == CLF__FUZZ_POWER ? p : a, b);
        const char *why = "";
        clf_graph_status(g, &why);
        ck_assert_msg(clf_tensor_valid(y), "%s of %s refused: %s", info->name, clf_dtype_name(dt), why);
        clf_dtype ydt;
        ck_assert_int_eq(clf_tensor_dtype(g, y, &ydt), CLF_OK);
        ck_assert_int_eq(ydt, info->rule == CLF__DT_BOOL ? CLF_BOOL : dt);
        ck_assert_int_eq(clf_graph_output(g, info->name, y), CLF_OK);
        if (!domain_is_exact(info->fuzz))
            tols[ntol++] = (e2e_tol){info->name, half_rtol(dt), half_atol(dt)};
        nout++;
    }
    tols[ntol] = (e2e_tol){NULL, 0, 0};
    ck_assert_int_eq(clf_graph_output(g, "add_row", clf_add(g, a, row)), CLF_OK);
    ck_assert_int_eq(clf_graph_output(g, "mul_col", clf_mul(g, col, b)), CLF_OK);
    nout += 2;
    const char *msg = "";
    ck_assert_msg(clf_graph_status(g, &msg) == CLF_OK, "%s", msg);
    e2e_run r;
    check_half(g, &in, unfused, 1, 0, 0, tols, &r);
    ck_assert_uint_eq(r.n, nout);
    ck_assert_uint_eq(r.stats.unfused_kernels, nout);
    for (int i = 0; i < N_PAIRS; i++) {
        if (half_isnan(dt, pairs[i].want))
            assert_nan(&r, dt, pairs[i].op, (size_t)i);
        else
            assert_bits(&r, pairs[i].op, (size_t)i, pairs[i].want);
    }
    const uint8_t *eq = e2e_got(&r, "eq"), *ne = e2e_got(&r, "ne"), *lt = e2e_got(&r, "lt");
    const uint8_t *ge = e2e_got(&r, "ge");
    for (int i = 101; i < 133; i += 3) {
        bool nan = half_isnan(dt, ad[i]);
        ck_assert(eq[i] == !nan && ne[i] == nan && lt[i] == 0 && ge[i] == !nan);
    }
    for (int i = 0; i < N_PAIRS; i++) /* NaN against anything compares false, except ne */
        if (half_isnan(dt, pairs[i].a) || half_isnan(dt, pairs[i].b))
            ck_assert_msg(eq[i] == 0 && ne[i] == 1 && lt[i] == 0 && ge[i] == 0, "pair %d", i);
    e2e_run_free(&r);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}

START_TEST(every_float_binary_op_f16)
{
    check_binary_ops(CLF_F16, true);
}
END_TEST

START_TEST(every_float_binary_op_bf16)
{
    check_binary_ops(CLF_BF16, false);
}
END_TEST

/* where, clip, movement ops, concat, gather and gather_elements move or
 * select stored values: bit for bit in both forms. */
START_TEST(selection_and_movement_ops_are_exact)
{
    for (int d = 0; d < 2; d++) {
        clf_dtype dt = HALF_DTYPES[d];
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        int64_t s[2] = {4, 6}, srow[1] = {6}, s3[1] = {3};
        clf_tensor x = e2e_input(g, &in, "x", dt, 2, s, -3.0, 3.0);
        clf_tensor y = e2e_input(g, &in, "y", dt, 2, s, -3.0, 3.0);
        clf_tensor c = e2e_input(g, &in, "c", CLF_BOOL, 2, s, 0, 1);
        clf_tensor r = e2e_input(g, &in, "r", dt, 1, srow, -3.0, 3.0);
        clf_tensor idx = e2e_input(g, &in, "idx", CLF_I64, 1, s3, -6, 5);
        clf_tensor eidx = e2e_input(g, &in, "eidx", CLF_I32, 2, s, -4, 3);
        uint16_t *xd = e2e_data(&in, "x"), *yd = e2e_data(&in, "y");
        memcpy(xd, specials(dt), 20 * sizeof *xd);
        memcpy(yd + 4, specials(dt), 20 * sizeof *yd);
        clf_graph_output(g, "where", clf_where(g, c, x, y));
        clf_graph_output(g, "where_row", clf_where(g, c, clf_neg(g, r), x)); /* r broadcast */
        clf_graph_output(g, "clip", clf_clip(g, x, -1.5, 2.25));            /* bounds exact in both types */
        int64_t st[1] = {5}, en[1] = {0}, sp[1] = {-2};
        int ax1[1] = {1};
        clf_tensor xt = clf_transpose(g, x, 0, NULL);                    /* [6, 4] */
        clf_graph_output(g, "slice_t", clf_slice(g, xt, 1, st, en, ax1, sp)); /* columns 3, 1 of x^T */
        int64_t rs[2] = {3, 8};
        int perm[2] = {1, 0}, ax0[1] = {0};
        clf_graph_output(g, "reshape_t",
                         clf_unsqueeze(g, clf_transpose(g, clf_reshape(g, y, 2, rs), 2, perm), 1, ax0));
        clf_tensor xs[3] = {x, y, clf_slice(g, y, 1, st, en, ax1, sp)}; /* [4, 6], [4, 6], [4, 3] */
        clf_graph_output(g, "concat", clf_concat(g, 3, xs, 1));
        clf_graph_output(g, "gather", clf_gather(g, x, idx, 1));
        clf_graph_output(g, "gather_elements", clf_gather_elements(g, y, eidx, 0));
        clf_graph_output(g, "max_t", clf_maximum(g, xt, clf_transpose(g, y, 0, NULL)));
        const char *msg = "";
        ck_assert_msg(clf_graph_status(g, &msg) == CLF_OK, "%s: %s", clf_dtype_name(dt), msg);
        check_half(g, &in, false, E2E_ANY_KERNELS, 0, 0, NULL, NULL);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
}
END_TEST

/* ---- Casts -------------------------------------------------------------- */

enum { NCAST = 64 };
static const clf_dtype CAST_DTYPES[6] = {CLF_F32, CLF_F16, CLF_BF16, CLF_I32, CLF_I64, CLF_BOOL};

/* Each of f32, f16, bf16, i32, i64 and bool cast to each (36 ordered
 * pairs, the same-dtype ones copies) on random values with the special
 * ones planted: bit for bit against the reference, and against ONNX Cast's
 * results written out here for the special values. */
START_TEST(casts_between_all_36_dtype_pairs)
{
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    int64_t n = NCAST;
    clf_tensor src[6];
    src[0] = e2e_input(g, &in, "f32", CLF_F32, 1, &n, -8e4, 8e4);
    src[1] = e2e_input(g, &in, "f16", CLF_F16, 1, &n, -300.0, 300.0);
    src[2] = e2e_input(g, &in, "bf16", CLF_BF16, 1, &n, -1e6, 1e6);
    src[3] = e2e_input(g, &in, "i32", CLF_I32, 1, &n, -70000, 70000);
    src[4] = e2e_input(g, &in, "i64", CLF_I64, 1, &n, -70000, 70000);
    src[5] = e2e_input(g, &in, "bool", CLF_BOOL, 1, &n, 0, 1);
    float *f32 = e2e_data(&in, "f32");
    uint16_t *f16 = e2e_data(&in, "f16"), *bf16 = e2e_data(&in, "bf16");
    int32_t *i32 = e2e_data(&in, "i32");
    int64_t *i64 = e2e_data(&in, "i64");
    uint8_t *bl = e2e_data(&in, "bool");
    clf_test_fill_f32(f32 + 40, 24, -3.0f, 3.0f); /* fractions too */
    const float f32_special[] = {
        65519.0f, 65520.0f, 1e5f, -1e5f, 6e-8f, 5.96e-8f, 0x1p-25f, 1.0f + 0x1p-11f, 1.0f + 0x3p-11f, NAN,
        -0.0f, INFINITY, -INFINITY, 1.0f + 0x1p-8f, 1.0f + 0x3p-8f, 3e9f, -3e9f, -2.7f, 0.3f, 1e20f,
        -1e20f, 0x1.8p-24f, 65504.0f, 3.3895314e38f, f32_of_bits(0x7f7fffffu), f32_of_bits(0x7f800001u),
        f32_of_bits(0x7f802000u), -NAN, 65519.996f, 16777217.0f /* rounds to 2^24 as f32 already */,
    };
    memcpy(f32, f32_special, sizeof f32_special);
    const uint16_t f16_special[] = {0x7bff, 0xfbff, 0x0001, 0x8000, 0x7e00, 0x7c00, 0xfc00,
                                    0x3c04, 0x3c0c, 0xc100, 0x03ff, 0x0400, 0x8001, 0xfe00};
    memcpy(f16, f16_special, sizeof f16_special);
    const uint16_t bf16_special[] = {0x7f7f, 0xff7f, 0x0001, 0x8000, 0x7fc0, 0x7f80, 0x4780, 0x477f,
                                     0x3380, 0x3300, 0x3340, 0x3f81, 0xc020, 0x4f80, 0x7f00, 0xff80, 0x477e};
    memcpy(bf16, bf16_special, sizeof bf16_special);
    const int32_t i32_special[] = {INT32_MAX, INT32_MIN, 65519, 65520, 0, -1, 2049, 2051, 257, 259, 16777217, -65519};
    memcpy(i32, i32_special, sizeof i32_special);
    const int64_t i64_special[] = {INT64_MAX, INT64_MIN, 4294967297LL, -65520, 65504, 2049, 0, 1LL << 40};
    memcpy(i64, i64_special, sizeof i64_special);
    const uint8_t bool_special[] = {0, 1, 2, 255};
    memcpy(bl, bool_special, sizeof bool_special);

    char names[36][24];
    for (int s = 0; s < 6; s++)
        for (int d = 0; d < 6; d++) {
            char *nm = names[s * 6 + d];
            snprintf(nm, sizeof names[0], "%s_to_%s", clf_dtype_name(CAST_DTYPES[s]), clf_dtype_name(CAST_DTYPES[d]));
            clf_tensor y = clf_cast(g, src[s], CAST_DTYPES[d]);
            clf_dtype ydt;
            ck_assert_int_eq(clf_tensor_dtype(g, y, &ydt), CLF_OK);
            ck_assert_int_eq(ydt, CAST_DTYPES[d]);
            ck_assert_int_eq(clf_graph_output(g, nm, y), CLF_OK);
        }
    const char *msg = "";
    ck_assert_msg(clf_graph_status(g, &msg) == CLF_OK, "%s", msg);
    e2e_run r;
    check_half(g, &in, false, E2E_ANY_KERNELS, 0, 0, NULL, &r);
    ck_assert_uint_eq(r.n, 36);

    /* f32 -> f16 / bf16 */
    static const uint16_t f32_to_f16[] = {0x7bff, 0x7c00, 0x7c00, 0xfc00, 0x0001, 0x0001, 0x0000, 0x3c00, 0x3c02};
    for (size_t i = 0; i < sizeof f32_to_f16 / sizeof f32_to_f16[0]; i++)
        assert_bits(&r, "f32_to_f16", i, f32_to_f16[i]);
    assert_nan(&r, CLF_F16, "f32_to_f16", 9);
    assert_bits(&r, "f32_to_f16", 10, 0x8000);
    assert_bits(&r, "f32_to_f16", 11, 0x7c00);
    assert_bits(&r, "f32_to_f16", 12, 0xfc00);
    assert_bits(&r, "f32_to_f16", 13, 0x3c04);
    assert_bits(&r, "f32_to_f16", 21, 0x0002);
    assert_bits(&r, "f32_to_f16", 22, 0x7bff);
    assert_bits(&r, "f32_to_f16", 23, 0x7c00);
    assert_bits(&r, "f32_to_f16", 24, 0x7c00);
    assert_nan(&r, CLF_F16, "f32_to_f16", 25);
    assert_nan(&r, CLF_F16, "f32_to_f16", 26);
    assert_nan(&r, CLF_F16, "f32_to_f16", 27);
    assert_bits(&r, "f32_to_f16", 28, 0x7bff);
    assert_bits(&r, "f32_to_bf16", 13, 0x3f80);
    assert_bits(&r, "f32_to_bf16", 14, 0x3f82);
    assert_bits(&r, "f32_to_bf16", 22, 0x4780);
    assert_bits(&r, "f32_to_bf16", 23, 0x7f7f);
    assert_bits(&r, "f32_to_bf16", 24, 0x7f80);
    assert_nan(&r, CLF_BF16, "f32_to_bf16", 9);
    assert_nan(&r, CLF_BF16, "f32_to_bf16", 25); /* truncation would give inf */
    assert_nan(&r, CLF_BF16, "f32_to_bf16", 26);
    assert_bits(&r, "f32_to_bf16", 10, 0x8000);
    const int32_t *f32_i32 = e2e_got(&r, "f32_to_i32");
    ck_assert(f32_i32[9] == 0 && f32_i32[11] == INT32_MAX && f32_i32[12] == INT32_MIN && f32_i32[15] == INT32_MAX &&
              f32_i32[16] == INT32_MIN && f32_i32[17] == -2);
    const uint8_t *f32_b = e2e_got(&r, "f32_to_bool");
    ck_assert(f32_b[9] == 1 && f32_b[10] == 0 && f32_b[18] == 1 && f32_b[6] == 1);

    /* f16 -> * */
    const float *f16_f32 = e2e_got(&r, "f16_to_f32");
    ck_assert(f16_f32[0] == 65504.0f && f16_f32[2] == 0x1p-24f && f16_f32[3] == 0.0f && signbit(f16_f32[3]));
    ck_assert(isnan(f16_f32[4]) && f16_f32[5] == INFINITY && f16_f32[10] == 0x1.ff8p-15f);
    assert_bits(&r, "f16_to_bf16", 0, 0x4780);
    assert_bits(&r, "f16_to_bf16", 2, 0x3380);
    assert_bits(&r, "f16_to_bf16", 3, 0x8000);
    assert_nan(&r, CLF_BF16, "f16_to_bf16", 4);
    assert_bits(&r, "f16_to_bf16", 5, 0x7f80);
    assert_bits(&r, "f16_to_bf16", 7, 0x3f80); /* 1 + 2^-8: a tie, to even */
    assert_bits(&r, "f16_to_bf16", 8, 0x3f82); /* 1 + 3 * 2^-8 */
    assert_bits(&r, "f16_to_bf16", 10, 0x3880);
    const int32_t *f16_i32 = e2e_got(&r, "f16_to_i32");
    ck_assert(f16_i32[0] == 65504 && f16_i32[1] == -65504 && f16_i32[2] == 0 && f16_i32[4] == 0 &&
              f16_i32[5] == INT32_MAX && f16_i32[6] == INT32_MIN && f16_i32[9] == -2);
    const int64_t *f16_i64 = e2e_got(&r, "f16_to_i64");
    ck_assert(f16_i64[0] == 65504 && f16_i64[4] == 0 && f16_i64[5] == INT64_MAX && f16_i64[6] == INT64_MIN);
    const uint8_t *f16_b = e2e_got(&r, "f16_to_bool");
    ck_assert(f16_b[2] == 1 && f16_b[3] == 0 && f16_b[4] == 1 && f16_b[5] == 1 && f16_b[12] == 1);

    /* bf16 -> * */
    assert_bits(&r, "bf16_to_f16", 0, 0x7c00);
    assert_bits(&r, "bf16_to_f16", 1, 0xfc00);
    assert_bits(&r, "bf16_to_f16", 2, 0x0000);
    assert_bits(&r, "bf16_to_f16", 3, 0x8000);
    assert_nan(&r, CLF_F16, "bf16_to_f16", 4);
    assert_bits(&r, "bf16_to_f16", 6, 0x7c00); /* 65536 */
    assert_bits(&r, "bf16_to_f16", 7, 0x7bf8); /* 65280 */
    assert_bits(&r, "bf16_to_f16", 8, 0x0001); /* 2^-24 */
    assert_bits(&r, "bf16_to_f16", 9, 0x0000); /* 2^-25: a tie, to even */
    assert_bits(&r, "bf16_to_f16", 10, 0x0001); /* 0.75 * 2^-24 */
    assert_bits(&r, "bf16_to_f16", 11, 0x3c08);
    assert_bits(&r, "bf16_to_f16", 16, 0x7bf0); /* 65024 */
    const float *bf16_f32 = e2e_got(&r, "bf16_to_f32");
    ck_assert(bits_of_f32(bf16_f32[2]) == 0x00010000u && bits_of_f32(bf16_f32[0]) == 0x7f7f0000u);
    const int32_t *bf16_i32 = e2e_got(&r, "bf16_to_i32");
    ck_assert(bf16_i32[0] == INT32_MAX && bf16_i32[1] == INT32_MIN && bf16_i32[4] == 0 && bf16_i32[12] == -2 &&
              bf16_i32[13] == INT32_MAX && bf16_i32[6] == 65536);
    const int64_t *bf16_i64 = e2e_got(&r, "bf16_to_i64");
    ck_assert(bf16_i64[13] == 4294967296LL && bf16_i64[14] == INT64_MAX && bf16_i64[15] == INT64_MIN &&
              bf16_i64[4] == 0);
    const uint8_t *bf16_b = e2e_got(&r, "bf16_to_bool");
    ck_assert(bf16_b[2] == 1 && bf16_b[3] == 0 && bf16_b[4] == 1);

    /* ints and bool -> f16 / bf16 */
    assert_bits(&r, "i32_to_f16", 0, 0x7c00);
    assert_bits(&r, "i32_to_f16", 1, 0xfc00);
    assert_bits(&r, "i32_to_f16", 2, 0x7bff);
    assert_bits(&r, "i32_to_f16", 3, 0x7c00);
    assert_bits(&r, "i32_to_f16", 4, 0x0000);
    assert_bits(&r, "i32_to_f16", 5, 0xbc00);
    assert_bits(&r, "i32_to_f16", 6, 0x6800); /* 2049: a tie, to even */
    assert_bits(&r, "i32_to_f16", 7, 0x6802); /* 2051 */
    assert_bits(&r, "i32_to_f16", 11, 0xfbff);
    assert_bits(&r, "i32_to_bf16", 0, 0x4f00);
    assert_bits(&r, "i32_to_bf16", 1, 0xcf00);
    assert_bits(&r, "i32_to_bf16", 8, 0x4380); /* 257: a tie, to even */
    assert_bits(&r, "i32_to_bf16", 9, 0x4382); /* 259 */
    assert_bits(&r, "i32_to_bf16", 10, 0x4b80);
    assert_bits(&r, "i64_to_f16", 0, 0x7c00);
    assert_bits(&r, "i64_to_f16", 3, 0xfc00);
    assert_bits(&r, "i64_to_f16", 4, 0x7bff);
    assert_bits(&r, "i64_to_f16", 5, 0x6800);
    assert_bits(&r, "i64_to_bf16", 0, 0x5f00);
    assert_bits(&r, "i64_to_bf16", 1, 0xdf00);
    assert_bits(&r, "bool_to_f16", 0, 0x0000);
    assert_bits(&r, "bool_to_f16", 1, 0x3c00);
    assert_bits(&r, "bool_to_f16", 2, 0x3c00);
    assert_bits(&r, "bool_to_f16", 3, 0x3c00);
    assert_bits(&r, "bool_to_bf16", 2, 0x3f80);
    const int32_t *i64_i32 = e2e_got(&r, "i64_to_i32");
    ck_assert(i64_i32[0] == -1 && i64_i32[1] == 0 && i64_i32[2] == 1 && i64_i32[7] == 0);
    const uint8_t *i64_b = e2e_got(&r, "i64_to_bool");
    ck_assert(i64_b[6] == 0 && i64_b[7] == 1);
    e2e_run_free(&r);
    clf_graph_destroy(&g);

    /* Unfused (a kernel per cast): f32 to and from f16, f32 to bf16, bf16
     * to f16 (bf16's loads and stores are the unary bf16 case's). */
    static const int pairs[4][2] = {{0, 1}, {1, 0}, {0, 2}, {2, 1}};
    g = clf_graph_create();
    for (int s = 0; s < 6; s++)
        src[s] = clf_input(g, clf_dtype_name(CAST_DTYPES[s]), CAST_DTYPES[s], 1, &n);
    for (int p = 0; p < 4; p++)
        clf_graph_output(g, names[pairs[p][0] * 6 + pairs[p][1]], clf_cast(g, src[pairs[p][0]], CAST_DTYPES[pairs[p][1]]));
    ck_assert_msg(clf_graph_status(g, &msg) == CLF_OK, "%s", msg);
    clf_context *ctx = clf_test_context();
    e2e_check(ctx, g, &in, 0, 0, NULL, E2E_UNFUSED, NULL);
    clf_context_destroy(&ctx);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

/* Scalars and constants of f16 and bf16 are rounded as clf_cast rounds. */
START_TEST(scalars_and_constants_round_like_cast)
{
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    int64_t n = 4;
    clf_tensor x = e2e_input(g, &in, "x", CLF_F16, 1, &n, -2.0, 2.0);
    /* f16 scalars 65519, 65520, 1 + 2^-11, NaN, 6e-8 and bf16 ones
     * 1 + 3 * 2^-8, the bf16 maximum, each made a [1] and concatenated */
    static const double fvals[5] = {65519.0, 65520.0, 1.0 + 0x1p-11, NAN, 6e-8};
    static const double bvals[2] = {1.0 + 0x3p-8, 3.3895313892515355e38};
    int ax0[1] = {0};
    clf_tensor fs[5], bs[2];
    for (int i = 0; i < 5; i++)
        fs[i] = clf_unsqueeze(g, clf_scalar(g, CLF_F16, fvals[i]), 1, ax0);
    for (int i = 0; i < 2; i++)
        bs[i] = clf_unsqueeze(g, clf_scalar(g, CLF_BF16, bvals[i]), 1, ax0);
    clf_graph_output(g, "fscalars", clf_concat(g, 5, fs, 0));
    clf_graph_output(g, "bscalars", clf_concat(g, 2, bs, 0));
    static const uint16_t cbits[4] = {0x7bff, 0x0001, 0x8000, 0x3c01};
    clf_tensor c = clf_constant(g, CLF_F16, 1, &n, cbits);
    clf_graph_output(g, "c", c);
    clf_graph_output(g, "x_plus_c", clf_add(g, x, c));
    clf_graph_output(g, "x_times_half", clf_mul(g, x, clf_scalar(g, CLF_F16, 0.5)));
    const char *msg = "";
    ck_assert_msg(clf_graph_status(g, &msg) == CLF_OK, "%s", msg);
    e2e_run r;
    check_half(g, &in, false, E2E_ANY_KERNELS, 0, 0, NULL, &r);
    assert_bits(&r, "fscalars", 0, 0x7bff);
    assert_bits(&r, "fscalars", 1, 0x7c00);
    assert_bits(&r, "fscalars", 2, 0x3c00);
    assert_nan(&r, CLF_F16, "fscalars", 3);
    assert_bits(&r, "fscalars", 4, 0x0001);
    assert_bits(&r, "bscalars", 0, 0x3f82);
    assert_bits(&r, "bscalars", 1, 0x7f7f);
    for (size_t i = 0; i < 4; i++)
        assert_bits(&r, "c", i, cbits[i]);
    e2e_run_free(&r);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

/* ---- Mixed graphs and fusion ------------------------------------------------- */

/* An f16 input cast to f32, computed on in f32 with an f32 input, cast
 * back to f16 and to bf16: one kernel. */
START_TEST(f16_cast_to_f32_computed_and_cast_back_one_kernel)
{
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    int64_t n = 1003;
    clf_tensor x = e2e_input(g, &in, "x", CLF_F16, 1, &n, -4.0, 4.0);
    clf_tensor b = e2e_input(g, &in, "b", CLF_F32, 1, &n, -1.0, 1.0);
    uint16_t *xd = e2e_data(&in, "x");
    memcpy(xd, F16_SPECIAL, sizeof F16_SPECIAL);
    clf_tensor xf = clf_cast(g, x, CLF_F32);
    clf_graph_output(g, "y", clf_cast(g, clf_tanh(g, clf_add(g, clf_mul(g, xf, clf_scalar(g, CLF_F32, 3.0)), b)), CLF_F16));
    clf_graph_output(g, "z", clf_cast(g, clf_add(g, xf, b), CLF_BF16));
    clf_graph_output(g, "w", clf_cast(g, clf_mul(g, xf, xf), CLF_F16)); /* 65504^2: f32 is finite, f16 is not */
    const e2e_tol tols[] = {{"y", half_rtol(CLF_F16), half_atol(CLF_F16)}, {NULL, 0, 0}};
    e2e_run r;
    check_half(g, &in, false, 1, 0, 0, tols, &r);
    ck_assert_uint_eq(r.stats.unfused_kernels, 9); /* cast, mul, add, tanh, cast; add, cast; mul, cast */
    assert_bits(&r, "w", SP_MAX, 0x7c00);
    assert_bits(&r, "w", SP_TINY, 0x0000); /* 2^-48 */
    assert_bits(&r, "w", SP_NZERO, 0x0000);
    assert_nan(&r, CLF_F16, "w", SP_NAN);
    e2e_run_free(&r);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

/* A chain of exact f16 (and bf16) ops fuses into one kernel that rounds
 * every node to the storage type, as the reference does: x * y + z with
 * x = y = 1 + 1 ulp and z = -(x * y rounded) is exactly 0, where keeping
 * the product in f32 would give the dropped low bits (2^-20 for f16,
 * 2^-14 for bf16); 65504 * 2 is inf before 65504 is subtracted. Bit for
 * bit in both forms (the ops' unfused kernels are the binary cases'). */
START_TEST(half_chain_rounds_every_node_in_one_kernel)
{
    for (int d = 0; d < 2; d++) {
        clf_dtype dt = HALF_DTYPES[d];
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        int64_t s[2] = {9, 37};
        clf_tensor x = e2e_input(g, &in, "x", dt, 2, s, -3.0, 3.0);
        clf_tensor y = e2e_input(g, &in, "y", dt, 2, s, -3.0, 3.0);
        clf_tensor z = e2e_input(g, &in, "z", dt, 2, s, -3.0, 3.0);
        uint16_t *xd = e2e_data(&in, "x"), *yd = e2e_data(&in, "y"), *zd = e2e_data(&in, "z");
        xd[0] = yd[0] = dt == CLF_F16 ? 0x3c01 : 0x3f81;
        zd[0] = dt == CLF_F16 ? 0xbc02 : 0xbf82;
        xd[1] = dt == CLF_F16 ? 0x7bff : 0x7f7f; /* 65504 * 2 - 65504 overflows at the product */
        yd[1] = dt == CLF_F16 ? 0x4000 : 0x4000;
        zd[1] = dt == CLF_F16 ? 0xfbff : 0xff7f;
        clf_tensor fma = clf_add(g, clf_mul(g, x, y), z);
        clf_tensor chain = clf_neg(g, clf_maximum(g, clf_sub(g, clf_relu(g, fma), y), x));
        clf_graph_output(g, "fma", fma);
        clf_graph_output(g, "chain", chain);
        const char *msg = "";
        ck_assert_msg(clf_graph_status(g, &msg) == CLF_OK, "%s", msg);
        e2e_run r;
        check_half(g, &in, false, 1, 0, 0, NULL, &r);
        ck_assert_uint_eq(r.stats.unfused_kernels, 6); /* mul add relu sub maximum neg */
        assert_bits(&r, "fma", 0, 0x0000);
        assert_bits(&r, "fma", 1, dt == CLF_F16 ? 0x7c00 : 0x7f80); /* inf - max = inf */
        e2e_run_free(&r);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
}
END_TEST

/* Operands of different dtypes are refused with a message; so is a matmul
 * of f16 by bf16. */
START_TEST(mixed_dtype_operands_are_refused)
{
    int64_t s[2] = {3, 3};
    for (int c = 0; c < 4; c++) {
        clf_graph *g = clf_graph_create();
        clf_tensor h = clf_input(g, "h", CLF_F16, 2, s);
        clf_tensor b = clf_input(g, "b", CLF_BF16, 2, s);
        clf_tensor f = clf_input(g, "f", CLF_F32, 2, s);
        clf_tensor t = c == 0   ? clf_add(g, h, b)
                       : c == 1 ? clf_mul(g, h, f)
                       : c == 2 ? clf_matmul(g, h, b)
                                : clf_matmul(g, f, h);
        ck_assert_msg(!clf_tensor_valid(t), "case %d accepted", c);
        const char *msg = NULL;
        ck_assert_int_ne(clf_graph_status(g, &msg), CLF_OK);
        ck_assert_ptr_nonnull(msg);
        ck_assert_msg(strlen(msg) > 0, "case %d: no message", c);
        clf_graph_destroy(&g);
    }
}
END_TEST

/* ---- Reductions ------------------------------------------------------------ */

/* Every reduction over several axis sets, argmax and argmin (ties are
 * common among f16 values), and rows with special values: a row of the
 * largest finite value (its f32 sum overflows f16: inf; its mean is the
 * value itself), NaN, +inf, signed zeros (max +0, min -0). Max, min,
 * argmax bit for bit; sums, means, products within two ulps. Both forms
 * (fusion off in the long-row and million-element cases). */
START_TEST(reductions_all_forms)
{
    for (int d = 0; d < 2; d++) {
        clf_dtype dt = HALF_DTYPES[d];
        int64_t s[3] = {5, 6, 7}, ss[2] = {5, 9};
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        clf_tensor x = e2e_input(g, &in, "x", dt, 3, s, -2.0, 2.0);
        clf_tensor xs = e2e_input(g, &in, "xs", dt, 2, ss, -3.0, 3.0);
        uint16_t *xd = e2e_data(&in, "xs");
        /* bf16: 3e37, so that the sum of nine stays finite in f32 */
        uint16_t big = dt == CLF_F16 ? 0x7bff : clf_test_to_bf16(3e37f);
        for (int i = 0; i < 9; i++) {
            xd[0 * 9 + i] = big;
            xd[3 * 9 + i] = (i % 3) ? 0x8000 : 0x0000;
        }
        xd[3 * 9 + 0] = 0x8000;
        xd[3 * 9 + 5] = 0x0000;
        xd[1 * 9 + 4] = specials(dt)[SP_NAN];
        xd[2 * 9 + 2] = specials(dt)[SP_INF];
        xd[4 * 9 + 7] = specials(dt)[SP_TINY];
        xd[4 * 9 + 1] = specials(dt)[SP_NTINY];
        int mid[1] = {1}, outer[2] = {0, 2}, last[1] = {-1};
        clf_graph_output(g, "sum_mid", clf_reduce_sum(g, x, 1, mid, false));
        clf_graph_output(g, "mean_outer", clf_reduce_mean(g, x, 2, outer, true));
        clf_graph_output(g, "max_last", clf_reduce_max(g, x, 1, last, false));
        clf_graph_output(g, "min_all", clf_reduce_min(g, x, 0, NULL, false));
        clf_graph_output(g, "prod_mid", clf_reduce_prod(g, x, 1, mid, true));
        clf_graph_output(g, "argmax_mid", clf_argmax(g, x, 1, false, false));
        clf_graph_output(g, "argmin_last", clf_argmin(g, x, -1, true, true));
        clf_graph_output(g, "s_sum", clf_reduce_sum(g, xs, 1, last, false));
        clf_graph_output(g, "s_mean", clf_reduce_mean(g, xs, 1, last, false));
        clf_graph_output(g, "s_max", clf_reduce_max(g, xs, 1, last, false));
        clf_graph_output(g, "s_min", clf_reduce_min(g, xs, 1, last, false));
        clf_graph_output(g, "s_argmax", clf_argmax(g, xs, 1, false, false));
        const char *msg = "";
        ck_assert_msg(clf_graph_status(g, &msg) == CLF_OK, "%s: %s", clf_dtype_name(dt), msg);
        double rt = half_rtol(dt), at = 1e-5; /* sums of a few values in [-2, 2) that nearly cancel */
        const e2e_tol tols[] = {{"sum_mid", rt, at}, {"mean_outer", rt, at}, {"prod_mid", rt, at},
                                {"s_sum", rt, at},   {"s_mean", rt, at},     {NULL, 0, 0}};
        e2e_run r;
        check_half(g, &in, false, E2E_ANY_KERNELS, 0, 0, tols, &r);
        /* nine times big: exact in f32 (f16: 589536, past the f16 maximum) */
        assert_bits(&r, "s_sum", 0, half_bits(dt, 9.0f * (float)half_value(dt, big)));
        assert_bits(&r, "s_mean", 0, big);
        assert_bits(&r, "s_max", 0, big);
        assert_nan(&r, dt, "s_sum", 1);
        assert_nan(&r, dt, "s_max", 1);
        assert_nan(&r, dt, "s_min", 1);
        assert_bits(&r, "s_sum", 2, specials(dt)[SP_INF]);
        assert_bits(&r, "s_max", 2, specials(dt)[SP_INF]);
        assert_bits(&r, "s_max", 3, 0x0000);
        assert_bits(&r, "s_min", 3, 0x8000);
        const int32_t *am = e2e_got(&r, "s_argmax");
        ck_assert_int_eq(am[0], 0); /* all equal: the first */
        ck_assert_int_eq(am[1], 4); /* the NaN */
        ck_assert_int_eq(am[2], 2); /* +inf */
        e2e_run_free(&r);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
}
END_TEST

/* Three rows of 70000: too few rows for the device, so each is split into
 * chunks (two launches) in both forms; sum, max, min and argmax of a row in
 * one kernel (f16 unfused as well). */
START_TEST(few_long_rows_split)
{
    for (int d = 0; d < 2; d++) {
        clf_dtype dt = HALF_DTYPES[d];
        int64_t s[2] = {3, 70000};
        int last = -1;
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        clf_tensor x = e2e_input(g, &in, "x", dt, 2, s, -1.0, 2.0);
        uint16_t *xd = e2e_data(&in, "x");
        xd[1 * 70000 + 69999] = specials(dt)[SP_MAX]; /* the maximum, in the last chunk */
        xd[2 * 70000 + 35001] = specials(dt)[SP_NINF];
        clf_graph_output(g, "sum", clf_reduce_sum(g, x, 1, &last, false));
        clf_graph_output(g, "max", clf_reduce_max(g, x, 1, &last, false));
        clf_graph_output(g, "min", clf_reduce_min(g, x, 1, &last, false));
        clf_graph_output(g, "amax", clf_argmax(g, x, 1, false, false));
        /* sum over 70000 in f32 then one rounding, against the f64 sum rounded */
        const e2e_tol tols[] = {{"sum", half_rtol(dt), 1e-3}, {NULL, 0, 0}};
        check_half(g, &in, dt == CLF_F16, 1, 0, 0, tols, NULL);
        clf_context *ctx = clf_test_context();
        for (int style = CLF_KERNEL_STYLE_CPU; style <= CLF_KERNEL_STYLE_GPU; style++) {
            clf_executable *exe = NULL;
            ck_assert_int_eq(clf_compile(ctx, g, clf_compile_params(.kernel_style = (clf_kernel_style)style), &exe),
                             CLF_OK);
            clf_plan_stats st;
            clf_executable_stats(exe, &st);
            ck_assert_uint_eq(st.kernels, 1);
            ck_assert_msg(st.launches == 2, "%s, style %d: %llu launches, want 2 (split)", clf_dtype_name(dt), style,
                          (unsigned long long)st.launches);
            clf_executable_destroy(&exe);
        }
        clf_context_destroy(&ctx);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
}
END_TEST

/* Runs g (one output "y" of dtype dt with one element) fused in each form
 * and, for a split one, unfused, and checks it against want (f64): |got -
 * want| <= tol, or got == want when want is infinite. When split, the
 * fused forms must take two launches. */
static void check_scalar_against_f64(const clf_graph *g, const e2e_inputs *in, clf_dtype dt, double want, double tol,
                                     bool split)
{
    clf_context *ctx = clf_test_context();
    const clf_compile_params variants[3] = {{.kernel_style = CLF_KERNEL_STYLE_CPU},
                                            {.kernel_style = CLF_KERNEL_STYLE_GPU},
                                            {.disable_fusion = true}};
    const char *names[3] = {"fused, CPU style", "fused, GPU style", "unfused"};
    for (int v = 0; v < (split ? 3 : 2); v++) {
        clf_executable *exe = NULL;
        ck_assert_msg(clf_compile(ctx, g, &variants[v], &exe) == CLF_OK, "%s", clf_context_last_error(ctx));
        if (split && v < 2) {
            clf_plan_stats st;
            clf_executable_stats(exe, &st);
            ck_assert_msg(st.launches == 2, "%s: %llu launches, want 2 (split)", names[v],
                          (unsigned long long)st.launches);
        }
        uint16_t got = 0xffff;
        clf_host_binding out = {"y", &got};
        ck_assert_int_eq(clf_run_host(exe, in->n, in->b, 1, &out), CLF_OK);
        double gv = half_value(dt, got);
        if (isinf(want))
            ck_assert_msg(gv == want, "%s %s: got %.9g (0x%04x), want %g", clf_dtype_name(dt), names[v], gv,
                          (unsigned)got, want);
        else
            ck_assert_msg(fabs(gv - want) <= tol, "%s %s: got %.9g (0x%04x), f64 %.9g, tolerance %g",
                          clf_dtype_name(dt), names[v], gv, (unsigned)got, want, tol);
        clf_executable_destroy(&exe);
    }
    clf_context_destroy(&ctx);
}

/* 10^6 f16 values in [0, 1) and in [-1, 1), and bf16 ones in [-1, 1): sum and mean
 * accumulate in f32 (or better) and round once. Tolerance against the f64
 * sum of the stored values: one ulp of the result's type at the f64 value
 * (the one rounding, and one more for an accumulator rounding at a tie)
 * plus 1e-6 * sum|x| for the accumulation itself (a naive f32 order may
 * lose about that much; f16 accumulation loses far more). The f16 sum of
 * [0, 1) is about 5e5, past the f16 maximum: it must be +inf, not NaN or
 * 65504. */
START_TEST(million_element_sum_and_mean_are_accurate)
{
    int64_t n = 1000000;
    for (int d = 0; d < 2; d++) {
        clf_dtype dt = HALF_DTYPES[d];
        for (int mixed = dt == CLF_BF16; mixed < 2; mixed++) { /* bf16: [-1, 1) only */
            e2e_inputs in = {0};
            clf_graph *g = clf_graph_create();
            clf_tensor x = e2e_input(g, &in, "x", dt, 1, &n, mixed ? -1.0 : 0.0, 1.0);
            const uint16_t *xd = e2e_data(&in, "x");
            double exact = 0, mag = 0;
            for (int64_t i = 0; i < n; i++) {
                double v = half_value(dt, xd[i]);
                exact += v;
                mag += fabs(v);
            }
            clf_graph_output(g, "y", clf_reduce_sum(g, x, 0, NULL, false));
            double want = exact;
            if (dt == CLF_F16 && !mixed) {
                ck_assert(exact > 65520);
                want = INFINITY;
            }
            check_scalar_against_f64(g, &in, dt, want, half_ulp_at(dt, exact) + 1e-6 * mag, true);
            clf_graph_destroy(&g);

            g = clf_graph_create();
            x = clf_input(g, "x", dt, 1, &n);
            clf_graph_output(g, "y", clf_reduce_mean(g, x, 0, NULL, false));
            double mean = exact / (double)n;
            check_scalar_against_f64(g, &in, dt, mean, half_ulp_at(dt, mean) + 1e-6 * mag / (double)n, false);
            clf_graph_destroy(&g);
            e2e_inputs_free(&in);
        }
    }
}
END_TEST

/* ---- Composites ------------------------------------------------------------- */

enum { SM_ROWS = 4, SM_COLS = 64 };

/* Rows that break a softmax or norm computed in f16: values 65504 - 32k
 * (the largest f16 values; several equal to the maximum), a moderate row,
 * +-65504 mixed, and values in [60000, 65504). Written as f32 and rounded
 * to dt. */
static void fill_large_rows(clf_dtype dt, uint16_t *x)
{
    for (int c = 0; c < SM_COLS; c++) {
        x[0 * SM_COLS + c] = half_bits(dt, 65504.0f - 32.0f * (float)(clf_test_rand() % 8));
        x[1 * SM_COLS + c] = half_bits(dt, clf_test_uniform(-8.0f, 8.0f));
        x[2 * SM_COLS + c] = half_bits(dt, (clf_test_rand() & 1) ? 65504.0f : -65504.0f);
        x[3 * SM_COLS + c] = half_bits(dt, clf_test_uniform(60000.0f, 65504.0f));
    }
    x[0] = half_bits(dt, 65504.0f);
    x[2 * SM_COLS] = half_bits(dt, 65504.0f);
    x[2 * SM_COLS + 1] = half_bits(dt, -65504.0f);
}

/* Checks output out (SM_ROWS x SM_COLS of dt) against want (f64): where
 * want rounds to an infinity of dt (a log-softmax of -65504 beside 65504
 * is -131011, past the f16 range) exactly that infinity, elsewhere finite
 * and within rtol * |want| + atol. */
static void check_rows_against_f64(const e2e_run *r, clf_dtype dt, const char *out, const double *want, double rtol,
                                   double atol)
{
    const uint16_t *got = e2e_got(r, out);
    for (int i = 0; i < SM_ROWS * SM_COLS; i++) {
        double gv = half_value(dt, got[i]);
        double rounded = half_value(dt, half_bits(dt, (float)want[i]));
        if (isinf(rounded)) {
            ck_assert_msg(gv == rounded, "%s %s[%d] = %g (0x%04x), want %g (f64 %.9g)", clf_dtype_name(dt), out, i,
                          gv, (unsigned)got[i], rounded, want[i]);
            continue;
        }
        ck_assert_msg(isfinite(gv), "%s %s[%d] = %g (0x%04x), want finite %.9g", clf_dtype_name(dt), out, i, gv,
                      (unsigned)got[i], want[i]);
        ck_assert_msg(fabs(gv - want[i]) <= atol + rtol * fabs(want[i]),
                      "%s %s[%d] = %.9g (0x%04x), f64 %.9g", clf_dtype_name(dt), out, i, gv, (unsigned)got[i], want[i]);
    }
}

/* Softmax and log-softmax of f16 (and bf16) rows near the f16 maximum:
 * computed in f32 inside, so the probabilities are finite (an f16
 * exp(65504) would be inf and the softmax NaN) and so is the log-softmax
 * wherever its value is inside the f16 range (-65504 beside 65504 gives
 * -131011: -inf); one kernel; against the reference and against softmax
 * computed in f64 from the stored values, to two ulps. Both forms. */
START_TEST(softmax_of_rows_near_the_f16_maximum)
{
    for (int d = 0; d < 2; d++) {
        clf_dtype dt = HALF_DTYPES[d];
        int64_t s[2] = {SM_ROWS, SM_COLS};
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        clf_tensor x = e2e_input(g, &in, "x", dt, 2, s, 0.0, 1.0);
        uint16_t *xd = e2e_data(&in, "x");
        fill_large_rows(dt, xd);
        clf_graph_output(g, "y", clf_softmax(g, x, -1));
        clf_graph_output(g, "ly", clf_log_softmax(g, x, -1));
        const char *msg = "";
        ck_assert_msg(clf_graph_status(g, &msg) == CLF_OK, "%s", msg);
        double want[SM_ROWS * SM_COLS], lwant[SM_ROWS * SM_COLS];
        for (int rr = 0; rr < SM_ROWS; rr++) {
            double mx = -INFINITY, sum = 0;
            for (int c = 0; c < SM_COLS; c++)
                mx = fmax(mx, half_value(dt, xd[rr * SM_COLS + c]));
            for (int c = 0; c < SM_COLS; c++)
                sum += exp(half_value(dt, xd[rr * SM_COLS + c]) - mx);
            for (int c = 0; c < SM_COLS; c++) {
                double v = half_value(dt, xd[rr * SM_COLS + c]) - mx;
                want[rr * SM_COLS + c] = exp(v) / sum;
                lwant[rr * SM_COLS + c] = v - log(sum);
            }
        }
        double rt = half_rtol(dt), at = half_atol(dt);
        const e2e_tol tols[] = {{"y", rt, at}, {"ly", rt, 1e-6}, {NULL, 0, 0}};
        e2e_run r;
        check_half(g, &in, false, 1, rt, at, tols, &r);
        check_rows_against_f64(&r, dt, "y", want, rt, at);
        check_rows_against_f64(&r, dt, "ly", lwant, rt, 1e-6);
        e2e_run_free(&r);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
}
END_TEST

/* Layer norm and RMS norm (with scale and bias of the same dtype) of the
 * same rows: the mean, variance and mean square are taken in f32 (x * x of
 * 65504 overflows f16), the result rounded once: finite, one kernel each,
 * against the reference and against f64. Tolerance: two ulps plus 2e-3
 * absolute (outputs of magnitude about 1, after f32 cancellation in x -
 * mean at 65504, whose f32 ulp is 0.004 against a spread of about 100).
 * Both forms; their unfused ops are the other cases'. */
START_TEST(norms_of_rows_near_the_f16_maximum)
{
    for (int d = 0; d < 2; d++) {
        clf_dtype dt = HALF_DTYPES[d];
        for (int rms = 0; rms < 2; rms++) {
            int64_t s[2] = {SM_ROWS, SM_COLS}, w[1] = {SM_COLS};
            clf_graph *g = clf_graph_create();
            e2e_inputs in = {0};
            clf_tensor x = e2e_input(g, &in, "x", dt, 2, s, 0.0, 1.0);
            clf_tensor sc = e2e_input(g, &in, "w", dt, 1, w, 0.5, 1.5);
            clf_tensor b = rms ? CLF_TENSOR_INVALID : e2e_input(g, &in, "b", dt, 1, w, -1.0, 1.0);
            uint16_t *xd = e2e_data(&in, "x");
            const uint16_t *wd = e2e_data(&in, "w"), *bd = rms ? NULL : e2e_data(&in, "b");
            fill_large_rows(dt, xd);
            const double eps = 1e-5;
            clf_graph_output(g, "y", rms ? clf_rms_norm(g, x, -1, eps, sc) : clf_layer_norm(g, x, -1, eps, sc, b));
            const char *msg = "";
            ck_assert_msg(clf_graph_status(g, &msg) == CLF_OK, "%s", msg);
            double want[SM_ROWS * SM_COLS];
            for (int rr = 0; rr < SM_ROWS; rr++) {
                double mean = 0, var = 0, ms = 0;
                for (int c = 0; c < SM_COLS; c++) {
                    double v = half_value(dt, xd[rr * SM_COLS + c]);
                    mean += v;
                    ms += v * v;
                }
                mean /= SM_COLS;
                ms /= SM_COLS;
                for (int c = 0; c < SM_COLS; c++) {
                    double v = half_value(dt, xd[rr * SM_COLS + c]) - mean;
                    var += v * v;
                }
                var /= SM_COLS;
                for (int c = 0; c < SM_COLS; c++) {
                    double v = half_value(dt, xd[rr * SM_COLS + c]);
                    double wv = half_value(dt, wd[c]), bv = rms ? 0 : half_value(dt, bd[c]);
                    want[rr * SM_COLS + c] = rms ? v / sqrt(ms + eps) * wv : (v - mean) / sqrt(var + eps) * wv + bv;
                }
            }
            double rt = half_rtol(dt), at = 2e-3;
            e2e_run r;
            check_half(g, &in, false, 1, rt, at, NULL, &r);
            check_rows_against_f64(&r, dt, "y", want, rt, at);
            e2e_run_free(&r);
            e2e_inputs_free(&in);
            clf_graph_destroy(&g);
        }
    }
}
END_TEST

/* ---- GEMM ---------------------------------------------------------------- */

/* Products of K terms in [-1, 1) accumulated in f32 and rounded once; the
 * epilogue's bias add rounds again, and where the bias cancels the product
 * an f32 accumulator that rounds the product to the other side of a tie
 * than the f64 reference shows as one ulp of the product's magnitude
 * (up to about 16 here): two ulps relative plus 16 ulps of 1 absolute. */
static double gemm_atol(clf_dtype dt) { return dt == CLF_F16 ? 16 * 0x1p-10 : 16 * 0x1p-7; }

static clf_tensor input2(clf_graph *g, e2e_inputs *in, const char *name, clf_dtype dt, int64_t r, int64_t c)
{
    int64_t s[2] = {r, c};
    return e2e_input(g, in, name, dt, 2, s, -1.0, 1.0);
}

/* relu(x @ w + b) on edge shapes (not multiples of any tile, M = 1, K =
 * 1): one kernel, both forms; the first shape of each dtype unfused as
 * well. The gemm suite covers more shapes in f32; what changes with the
 * dtype is the loads and the rounding store. */
START_TEST(linear_relu_edge_shapes)
{
    static const struct { clf_dtype dt; int64_t m, n, k; bool unfused; } cases[] = {
        {CLF_F16, 37, 53, 29, true}, {CLF_F16, 1, 40, 17, false}, {CLF_BF16, 19, 23, 1, true}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        clf_dtype dt = cases[i].dt;
        int64_t m = cases[i].m, n = cases[i].n, k = cases[i].k;
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        clf_tensor x = input2(g, &in, "x", dt, m, k);
        clf_tensor w = input2(g, &in, "w", dt, k, n);
        clf_tensor b = e2e_input(g, &in, "b", dt, 1, &n, -1.0, 1.0);
        clf_tensor mm = clf_matmul(g, x, w);
        clf_dtype mdt;
        ck_assert_int_eq(clf_tensor_dtype(g, mm, &mdt), CLF_OK);
        ck_assert_int_eq(mdt, dt);
        ck_assert_int_eq(clf_graph_output(g, "y", clf_relu(g, clf_add(g, mm, b))), CLF_OK);
        check_half(g, &in, cases[i].unfused, 1, half_rtol(dt), gemm_atol(dt), NULL, NULL);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
}
END_TEST

/* Long sums: K up to 4096 in f16 and bf16, both forms (and the GPU's
 * few-rows one), against the reference (which rounds the product to the
 * storage type once). The f32 sums differ from the double ones by about
 * sqrt(K) roundings of terms near 1, so the absolute tolerance grows with
 * sqrt(K): 16 ulps at 1 for K = 16, 256 at K = 4096 (the sums reach about
 * 60 there, where an f16 ulp is 2^-5 and a bf16 one 2^-2). */
START_TEST(long_k_products)
{
    static const struct { clf_dtype dt; int64_t m, n, k; } cases[] = {
        {CLF_F16, 33, 40, 1024}, {CLF_F16, 9, 24, 4096}, {CLF_BF16, 17, 36, 4096},
        /* The GPU's few-rows form: lanes of 8 columns, the last 4 alone. */
        {CLF_BF16, 1, 36, 4096}, {CLF_F16, 5, 44, 1024}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        clf_dtype dt = cases[i].dt;
        int64_t m = cases[i].m, n = cases[i].n, k = cases[i].k;
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        clf_tensor x = input2(g, &in, "x", dt, m, k);
        clf_tensor w = input2(g, &in, "w", dt, k, n);
        clf_tensor b = e2e_input(g, &in, "b", dt, 1, &n, -1.0, 1.0);
        ck_assert_int_eq(clf_graph_output(g, "y", clf_add(g, clf_matmul(g, x, w), b)), CLF_OK);
        check_half(g, &in, false, 1, half_rtol(dt), gemm_atol(dt) * sqrt((double)k / 16.0), NULL, NULL);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
}
END_TEST

/* Gemm with alpha, beta and transposed operands, spread over the two
 * dtypes: f16 with A transposed (C [M, 1]) and B transposed (C []), bf16
 * with both (no C); a batched f16 matmul with broadcast batch axes and a
 * residual. One kernel, both forms. */
START_TEST(gemm_transposes_and_batches)
{
    static const struct { clf_dtype dt; int t; } cases[] = {{CLF_F16, 1}, {CLF_F16, 2}, {CLF_BF16, 3}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        clf_dtype dt = cases[i].dt;
        {
            int t = cases[i].t;
            bool ta = t & 1, tb = (t >> 1) & 1;
            int64_t m = 21, n = 18, k = 11;
            clf_graph *g = clf_graph_create();
            e2e_inputs in = {0};
            clf_tensor a = ta ? input2(g, &in, "a", dt, k, m) : input2(g, &in, "a", dt, m, k);
            clf_tensor b = tb ? input2(g, &in, "b", dt, n, k) : input2(g, &in, "b", dt, k, n);
            int64_t cn[1] = {n}, cm[2] = {m, 1};
            clf_tensor c = t == 0   ? e2e_input(g, &in, "c", dt, 1, cn, -1.0, 1.0)
                           : t == 1 ? e2e_input(g, &in, "c", dt, 2, cm, -1.0, 1.0)
                           : t == 2 ? e2e_input(g, &in, "c", dt, 0, NULL, -1.0, 1.0)
                                    : CLF_TENSOR_INVALID;
            ck_assert_int_eq(clf_graph_output(g, "y", clf_gemm(g, a, b, c, 0.5, -2.0, ta, tb)), CLF_OK);
            check_half(g, &in, false, 1, half_rtol(dt), gemm_atol(dt), NULL, NULL);
            e2e_inputs_free(&in);
            clf_graph_destroy(&g);
        }
    }
    {
        clf_dtype dt = CLF_F16;
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        int64_t sa[4] = {2, 1, 5, 8}, sb[3] = {3, 8, 4}, sr[2] = {5, 4};
        clf_tensor a = e2e_input(g, &in, "a", dt, 4, sa, -1.0, 1.0);
        clf_tensor b = e2e_input(g, &in, "b", dt, 3, sb, -1.0, 1.0);
        clf_tensor res = e2e_input(g, &in, "res", dt, 2, sr, -1.0, 1.0);
        ck_assert_int_eq(clf_graph_output(g, "y", clf_add(g, clf_matmul(g, a, b), res)), CLF_OK);
        check_half(g, &in, false, 1, half_rtol(dt), gemm_atol(dt), NULL, NULL);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
}
END_TEST

/* K = 0: the product is zeros and the result is the bias, bit for bit
 * (-0 included: +0 + -0 is +0), fused in both forms and unfused; M = 0 has
 * no elements. f16; bf16 fused, K = 0 only. */
START_TEST(gemm_with_k_zero_is_the_bias)
{
    static const int64_t shapes[][3] = {{6, 5, 0}, {0, 5, 3}};
    for (int d = 0; d < 2; d++) {
        clf_dtype dt = HALF_DTYPES[d];
        for (size_t i = 0; i < (dt == CLF_F16 ? 2u : 1u); i++) {
            clf_graph *g = clf_graph_create();
            e2e_inputs in = {0};
            clf_tensor x = input2(g, &in, "x", dt, shapes[i][0], shapes[i][2]);
            clf_tensor w = input2(g, &in, "w", dt, shapes[i][2], shapes[i][1]);
            int64_t bs[1] = {shapes[i][1]};
            clf_tensor b = e2e_input(g, &in, "b", dt, 1, bs, -1.0, 1.0);
            clf_context *ctx = clf_test_context();
            uint16_t *bd = e2e_data(&in, "b");
            /* A bias of -0: 0 + (-0) is +0. Where the driver folds 0.0f + x
             * to x (runtime/driver_quirks.h: rusticl; its reproducer is
             * test_quirks'), the bias is +0 instead. */
            bd[0] = ctx->quirks & CLF__QUIRK_ZERO_PLUS_X_FOLDED ? 0x0000 : 0x8000;
            bd[1] = specials(dt)[SP_MAX];
            ck_assert_int_eq(clf_graph_output(g, "y", clf_add(g, clf_matmul(g, x, w), b)), CLF_OK);
            e2e_run r;
            e2e_check(ctx, g, &in, 0, 0, NULL, dt == CLF_F16 ? E2E_BOTH : E2E_FUSED, &r);
            if (shapes[i][0] > 0) {
                for (int64_t row = 0; row < shapes[i][0]; row++) {
                    assert_bits(&r, "y", (size_t)(row * 5 + 0), 0x0000);
                    assert_bits(&r, "y", (size_t)(row * 5 + 1), specials(dt)[SP_MAX]);
                    for (int c = 2; c < 5; c++)
                        assert_bits(&r, "y", (size_t)(row * 5 + c), bd[c]);
                }
                e2e_check_style(ctx, g, &in, CLF_KERNEL_STYLE_GPU, 0, 0);
                e2e_check_style(ctx, g, &in, CLF_KERNEL_STYLE_CPU, 0, 0);
            }
            e2e_run_free(&r);
            clf_context_destroy(&ctx);
            e2e_inputs_free(&in);
            clf_graph_destroy(&g);
        }
    }
}
END_TEST

/* A prologue on each operand (scale by an f16 scalar, add of a broadcast
 * row, tanh; a cast from i32 and a scale) runs in the GEMM's loads, and a
 * bias and relu in its epilogue: one kernel, both forms. */
START_TEST(gemm_prologue_and_epilogue_one_kernel)
{
    {
        clf_dtype dt = CLF_F16;
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        clf_tensor x = input2(g, &in, "x", dt, 33, 20);
        int64_t ws[2] = {20, 17}, rs[1] = {20}, bs[1] = {17};
        clf_tensor wi = e2e_input(g, &in, "wi", CLF_I32, 2, ws, -3, 3);
        clf_tensor shift = e2e_input(g, &in, "shift", dt, 1, rs, -1.0, 1.0);
        clf_tensor bias = e2e_input(g, &in, "bias", dt, 1, bs, -1.0, 1.0);
        clf_tensor a = clf_tanh(g, clf_add(g, clf_mul(g, x, clf_scalar(g, dt, 0.5)), shift));
        clf_tensor b = clf_mul(g, clf_cast(g, wi, dt), clf_scalar(g, dt, 0.25));
        ck_assert_int_eq(clf_graph_output(g, "y", clf_relu(g, clf_add(g, clf_matmul(g, a, b), bias))), CLF_OK);
        check_half(g, &in, false, 1, half_rtol(dt), gemm_atol(dt), NULL, NULL);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
}
END_TEST

/* ---- GEMM on the tensor cores -------------------------------------------- */

/* The graphs the tensor-core GEMM form (gemm_mma.cl) must get right, at
 * the edges of its 64-column blocks, 32-value K steps and 16 x 8 mma
 * tiles (extents 1, 17, 70, 130; K = 0), built with case c into g:
 *   0-3  f16 relu(x @ w + bias), odd extents (the generated loads);
 *   4    f16 relu(x @ w + bias) with K and N multiples of 8 (raw 16-byte
 *        stages) and partial blocks;
 *   5    bf16 x @ wt^T + res, wt [N, K] (a transposed B whose rows are
 *        raw stages) and a residual;
 *   6    bf16 with both operands transposed at odd extents, alpha, beta
 *        and a bias (clf_gemm);
 *   7    f16 cast(x @ w, f32): an f32 output;
 *   8    f16 batched [3, 17, 70] @ [70, 40] (B broadcast over the batch,
 *        raw stages) + bias;
 *   9    bf16 batched [3, 1, 130] @ [3, 130, 17]: M = 1 per batch;
 *   10   f16 K = 0: the bias (the epilogue of 0);
 *   11   f16 prologues in the loads (A: tanh(x * 0.5 + a broadcast row);
 *        B: an i32 cast and scaled) with a bias and relu;
 *   12   bf16 a long epilogue with outputs of three dtypes: a scale, a
 *        residual, clip and sigmoid (bf16), p > 0 (bool), p as f32;
 *   13   f16 stores at permuted places: relu(p) transposed and reshaped,
 *        and p + 1 as it is.
 * Returns the case's dtype; every case is one kernel. */
enum { TC_CASES = 14 };
static clf_dtype tensor_core_case(int c, clf_graph *g, e2e_inputs *in)
{
    static const int64_t odd[4][3] = {{1, 17, 70}, {17, 130, 1}, {70, 1, 130}, {130, 70, 17}};
    clf_dtype dt = c == 5 || c == 6 || c == 9 || c == 12 ? CLF_BF16 : CLF_F16;
    clf_tensor y;
    if (c <= 4) {
        int64_t m = c < 4 ? odd[c][0] : 70, n = c < 4 ? odd[c][1] : 136, k = c < 4 ? odd[c][2] : 64;
        clf_tensor x = input2(g, in, "x", dt, m, k), w = input2(g, in, "w", dt, k, n);
        clf_tensor b = e2e_input(g, in, "b", dt, 1, &n, -1.0, 1.0);
        y = clf_relu(g, clf_add(g, clf_matmul(g, x, w), b));
    } else if (c == 5) {
        clf_tensor x = input2(g, in, "x", dt, 130, 64), wt = input2(g, in, "wt", dt, 17, 64);
        clf_tensor res = input2(g, in, "res", dt, 130, 17);
        y = clf_add(g, clf_matmul(g, x, clf_transpose(g, wt, 0, NULL)), res);
    } else if (c == 6) {
        int64_t cn[1] = {70};
        clf_tensor a = input2(g, in, "a", dt, 17, 130), b = input2(g, in, "b", dt, 70, 17);
        y = clf_gemm(g, a, b, e2e_input(g, in, "c", dt, 1, cn, -1.0, 1.0), 0.5, -2.0, true, true);
    } else if (c == 7) {
        clf_tensor x = input2(g, in, "x", dt, 17, 70), w = input2(g, in, "w", dt, 70, 130);
        y = clf_cast(g, clf_matmul(g, x, w), CLF_F32);
    } else if (c == 8) {
        int64_t xs[3] = {3, 17, 70}, n = 40;
        clf_tensor x = e2e_input(g, in, "x", dt, 3, xs, -1.0, 1.0), w = input2(g, in, "w", dt, 70, 40);
        y = clf_add(g, clf_matmul(g, x, w), e2e_input(g, in, "b", dt, 1, &n, -1.0, 1.0));
    } else if (c == 9) {
        int64_t xs[3] = {3, 1, 130}, ws[3] = {3, 130, 17};
        y = clf_matmul(g, e2e_input(g, in, "x", dt, 3, xs, -1.0, 1.0), e2e_input(g, in, "w", dt, 3, ws, -1.0, 1.0));
    } else if (c == 10) {
        int64_t n = 5;
        clf_tensor x = input2(g, in, "x", dt, 6, 0), w = input2(g, in, "w", dt, 0, 5);
        y = clf_add(g, clf_matmul(g, x, w), e2e_input(g, in, "b", dt, 1, &n, -1.0, 1.0));
    } else if (c == 11) {
        int64_t ws[2] = {40, 24}, rs[1] = {40}, bs[1] = {24};
        clf_tensor x = input2(g, in, "x", dt, 33, 40);
        clf_tensor wi = e2e_input(g, in, "wi", CLF_I32, 2, ws, -3, 3);
        clf_tensor a = clf_tanh(g, clf_add(g, clf_mul(g, x, clf_scalar(g, dt, 0.5)),
                                           e2e_input(g, in, "shift", dt, 1, rs, -1.0, 1.0)));
        clf_tensor b = clf_mul(g, clf_cast(g, wi, dt), clf_scalar(g, dt, 0.25));
        y = clf_relu(g, clf_add(g, clf_matmul(g, a, b), e2e_input(g, in, "bias", dt, 1, bs, -1.0, 1.0)));
    } else if (c == 12) {
        clf_tensor x = input2(g, in, "x", dt, 45, 24), w = input2(g, in, "w", dt, 24, 38);
        clf_tensor p = clf_matmul(g, x, w);
        clf_tensor s = clf_add(g, clf_mul(g, p, clf_scalar(g, dt, 0.75)), input2(g, in, "r", dt, 45, 38));
        y = clf_sigmoid(g, clf_clip(g, s, -1.5, 1.5));
        ck_assert_int_eq(clf_graph_output(g, "positive", clf_gt(g, p, clf_scalar(g, dt, 0.0))), CLF_OK);
        ck_assert_int_eq(clf_graph_output(g, "p32", clf_cast(g, p, CLF_F32)), CLF_OK);
    } else {
        clf_tensor x = input2(g, in, "x", dt, 16, 24), w = input2(g, in, "w", dt, 24, 12);
        clf_tensor p = clf_matmul(g, x, w);
        clf_tensor t = clf_transpose(g, clf_relu(g, p), 0, NULL);
        y = clf_reshape(g, t, 2, (int64_t[]){6, 32});
        ck_assert_int_eq(clf_graph_output(g, "plus", clf_add(g, p, clf_scalar(g, dt, 1.0))), CLF_OK);
    }
    ck_assert_int_eq(clf_graph_output(g, "y", y), CLF_OK);
    return dt;
}

/* Whether kernels on ctx's device run work-groups of 128 (the tensor-core
 * forms' size): the device's limit, and a kernel's own, which can be
 * lower (rusticl's llvmpipe allows 32 a kernel however large the device
 * limit reads). */
static bool runs_groups_of_128(clf_context *ctx)
{
    return ctx->max_local >= 128 && clf_test_kernel_group_limit(ctx) >= 128;
}

/* Runs every tensor_core_case in the GPU form with CLFUSE_TENSOR_CORES=1
 * (and CLFUSE_BUILD_OPTIONS=options when not NULL) against the reference:
 * f32 accumulation of exact 16-bit products, rounded once, as the
 * portable form (K = 0 bit for bit); and checks that the kernel kept the
 * tensor-core form exactly where it builds: on NVIDIA's driver, or
 * emulated, on devices that run work-groups of 128. */
static void check_tensor_core_cases(const char *options, bool emulated, const char *tile)
{
    clf_context *ctx = clf_test_context();
    clf_device_desc dev;
    ck_assert_int_eq(clf_context_device(ctx, &dev), CLF_OK);
    bool nvidia = strstr(dev.platform_name, "NVIDIA") != NULL;
    /* The form needs work-groups of 128 (llvmpipe allows 32 a kernel). */
    bool want = runs_groups_of_128(ctx) && (emulated || nvidia);
    ck_assert_int_eq(setenv("CLFUSE_TENSOR_CORES", "1", 1), 0);
    if (options)
        ck_assert_int_eq(setenv("CLFUSE_BUILD_OPTIONS", options, 1), 0);
    if (tile)
        ck_assert_int_eq(setenv("CLFUSE_GEMM_TILE", tile, 1), 0);
    for (int c = 0; c < TC_CASES; c++) {
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        clf_dtype dt = tensor_core_case(c, g, &in);
        double rt = c == 10 ? 0 : half_rtol(dt), at = c == 10 ? 0 : gemm_atol(dt);
        ck_assert_uint_eq(e2e_check_style(ctx, g, &in, CLF_KERNEL_STYLE_GPU, rt, at), 1);
        clf_executable *exe = NULL;
        ck_assert_int_eq(clf_compile(ctx, g, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_GPU), &exe), CLF_OK);
        bool mma = strstr(clf_executable_kernel_source(exe, 0), CLF__MMA_LINE) != NULL;
        ck_assert_msg(mma == want, "case %d: tensor-core form %s on %s", c, mma ? "kept" : "dropped",
                      dev.platform_name);
        clf_executable_destroy(&exe);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
    unsetenv("CLFUSE_TENSOR_CORES");
    unsetenv("CLFUSE_BUILD_OPTIONS");
    unsetenv("CLFUSE_GEMM_TILE");
    clf_context_destroy(&ctx);
}

/* CLFUSE_TENSOR_CORES=1 asks for the tensor-core form whatever the
 * device: a driver that refuses its inline PTX (PoCL, any but NVIDIA's)
 * gets the portable form through clf_compile's lowering again, built and
 * right; on NVIDIA the form itself runs these shapes. */
START_TEST(gemm_tensor_cores_a_driver_refuses_fall_back) { check_tensor_core_cases(NULL, false, NULL); }
END_TEST

/* The tensor-core form with its mma emulated in OpenCL C (gemm_mma.cl's
 * CLF_MMA_EMULATE): its staging, fragment layouts, edges and epilogue
 * checked on any device that runs work-groups of 128. */
START_TEST(gemm_tensor_cores_emulated) { check_tensor_core_cases("-DCLF_MMA_EMULATE=1", true, NULL); }
END_TEST

/* The cases' small products take small blocks by default (32 x 32, four
 * stages of padded rows); pinned tilings run the large blocks' paths: 128 x
 * 128 on four warps of 64 x 64 and on eight of 64 x 32 (the default for
 * large products) in two padded stages, and in three with the
 * rows' chunks permuted instead (STAGE_PAD=0, the layout of blocks whose
 * padded stages do not fit), emulated where the driver has no PTX; on
 * NVIDIA also 128 x 64 on eight warps of 32 x 32 and 128 x 256 (permuted,
 * by default). */
START_TEST(gemm_tensor_cores_pinned_tilings)
{
    clf_context *ctx = clf_test_context();
    bool nvidia = clf_test_on_nvidia(ctx);
    clf_context_destroy(&ctx);
    check_tensor_core_cases(nvidia ? NULL : "-DCLF_MMA_EMULATE=1", true, "128,128,32,64,64,mma");
    check_tensor_core_cases(nvidia ? NULL : "-DCLF_MMA_EMULATE=1", true, "128,128,32,64,32,mma");
    check_tensor_core_cases(nvidia ? "-DSTAGE_PAD=0 -DSTAGES=3" : "-DCLF_MMA_EMULATE=1 -DSTAGE_PAD=0 -DSTAGES=3", true,
                            "128,128,32,64,64,mma");
    if (nvidia) {
        check_tensor_core_cases(NULL, true, "128,64,32,32,32,mma");
        check_tensor_core_cases(NULL, true, "128,256,32,64,64,mma");
    }
}
END_TEST

/* Autotuning a GEMM the tensor-core form takes times that form's tilings
 * (emulated where the driver has no PTX) and keeps one marked ",mma" on
 * disk; the result is right whichever wins. The tuner's entries and
 * CLFUSE_GEMM_TILE read the same text. */
START_TEST(gemm_tensor_cores_autotuned)
{
    clf__gemm_config c;
    ck_assert(clf__gemm_config_parse("128,64,32,64,32,mma", 19, &c));
    ck_assert(c.mma && c.tm == 128 && c.tn == 64 && c.tk == 32 && c.wm == 64 && c.wn == 32);
    ck_assert(clf__gemm_config_parse("64,64,16,4,4", 12, &c));
    ck_assert(!c.mma && c.tm == 64 && c.wn == 4);
    ck_assert(!clf__gemm_config_parse("64,64,16,4,4,tc", 15, &c));
    ck_assert(!clf__gemm_config_parse("64,64,16,4", 10, &c));

    clf_context *ctx = clf_test_context();
    if (!runs_groups_of_128(ctx)) {
        clf_context_destroy(&ctx);
        return; /* the form needs work-groups of 128 (checked above in the other tests) */
    }
    bool nvidia = clf_test_on_nvidia(ctx);
    ck_assert_int_eq(setenv("CLFUSE_TENSOR_CORES", "1", 1), 0);
    if (!nvidia)
        ck_assert_int_eq(setenv("CLFUSE_BUILD_OPTIONS", "-DCLF_MMA_EMULATE=1", 1), 0);
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor x = input2(g, &in, "x", CLF_F16, 40, 64), w = input2(g, &in, "w", CLF_F16, 64, 48);
    ck_assert_int_eq(clf_graph_output(g, "y", clf_relu(g, clf_matmul(g, x, w))), CLF_OK);
    const clf_compile_params *p = clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_GPU, .autotune = true);
    clf_executable *exe = NULL;
    ck_assert_int_eq(clf_compile(ctx, g, p, &exe), CLF_OK);
    ck_assert_ptr_nonnull(strstr(clf_executable_kernel_source(exe, 0), CLF__MMA_LINE));
    clf_executable_destroy(&exe);
    ck_assert_uint_eq(e2e_check_style(ctx, g, &in, CLF_KERNEL_STYLE_GPU, half_rtol(CLF_F16), gemm_atol(CLF_F16)), 1);
    /* The entry: "tm,tn,tk,wm,wn,mma" at the end of the file. */
    const char *dir = getenv("CLFUSE_CACHE_DIR");
    ck_assert_ptr_nonnull(dir);
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int entries = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (n < 7 || strcmp(e->d_name + n - 7, ".cltune") != 0)
            continue;
        char path[1024], text[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        ck_assert_ptr_nonnull(f);
        size_t len = fread(text, 1, sizeof text - 1, f);
        fclose(f);
        text[len] = '\0';
        ck_assert_msg(len > 4 && memcmp(text + len - 4, ",mma", 4) == 0, "entry %s does not end in ,mma", path);
        entries++;
    }
    closedir(d);
    ck_assert_int_eq(entries, 1);
    unsetenv("CLFUSE_TENSOR_CORES");
    unsetenv("CLFUSE_BUILD_OPTIONS");
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}
END_TEST

/* f32 GEMMs on TF32 tensor cores (opt-in), the shapes of the cases above:
 *   0    relu(x @ w + b), rows of 64 and 136 values (raw stages; B [k][n],
 *        whose fragments are 32-bit reads);
 *   1    clf_gemm with both operands transposed (A [k][m] read that way,
 *        B [n][k] by ldmatrix), alpha, beta and a bias;
 *   2    odd rows (70, 130: the generated loads);
 *   3    relu(x) @ w: a prologue;
 *   4    batched [3, 17, 72] @ [72, 40] + bias;
 *   5    K = 0: the bias. */
enum { TF32_CASES = 6 };
static void tf32_case(int c, clf_graph *g, e2e_inputs *in)
{
    const clf_dtype f = CLF_F32;
    clf_tensor y;
    if (c == 0) {
        int64_t n = 136;
        clf_tensor x = input2(g, in, "x", f, 70, 64), w = input2(g, in, "w", f, 64, 136);
        y = clf_relu(g, clf_add(g, clf_matmul(g, x, w), e2e_input(g, in, "b", f, 1, &n, -1.0, 1.0)));
    } else if (c == 1) {
        int64_t cn[1] = {70};
        clf_tensor a = input2(g, in, "a", f, 132, 17), b = input2(g, in, "b", f, 70, 132);
        y = clf_gemm(g, a, b, e2e_input(g, in, "c", f, 1, cn, -1.0, 1.0), 0.5, -2.0, true, true);
    } else if (c == 2) {
        y = clf_matmul(g, input2(g, in, "x", f, 17, 70), input2(g, in, "w", f, 70, 130));
    } else if (c == 3) {
        y = clf_matmul(g, clf_relu(g, input2(g, in, "x", f, 40, 64)), input2(g, in, "w", f, 64, 48));
    } else if (c == 4) {
        int64_t xs[3] = {3, 17, 72}, n = 40;
        clf_tensor x = e2e_input(g, in, "x", f, 3, xs, -1.0, 1.0), w = input2(g, in, "w", f, 72, 40);
        y = clf_add(g, clf_matmul(g, x, w), e2e_input(g, in, "b", f, 1, &n, -1.0, 1.0));
    } else {
        int64_t n = 5;
        clf_tensor x = input2(g, in, "x", f, 6, 0), w = input2(g, in, "w", f, 0, 5);
        y = clf_add(g, clf_matmul(g, x, w), e2e_input(g, in, "b", f, 1, &n, -1.0, 1.0));
    }
    ck_assert_int_eq(clf_graph_output(g, "y", y), CLF_OK);
}

/* Aligned f16 vector loads read raw bits and convert them in registers
 * (clf_f16_float4, dtype_table.c): every one of the 65536 patterns comes
 * back, zeros with their sign, subnormals, inf and NaN, through the GPU
 * reduction's vector loads: the max of a row [x, -inf x 7] is x; and a
 * kernel that casts its f16 loads to f32 at once has the conversion. */
START_TEST(aligned_vector_loads_keep_every_f16_pattern)
{
    enum { ROWS = 65536, COLS = 8 };
    clf_context *ctx = clf_test_context();
    clf_graph *g = clf_graph_create();
    int64_t sx[2] = {ROWS, COLS};
    int axis = 1;
    clf_tensor x = clf_input(g, "x", CLF_F16, 2, sx);
    ck_assert_int_eq(clf_graph_output(g, "y", clf_reduce_max(g, x, 1, &axis, false)), CLF_OK);
    uint16_t *xv = malloc(sizeof(uint16_t) * ROWS * COLS), *yv = malloc(sizeof(uint16_t) * ROWS);
    ck_assert(xv && yv);
    for (int r = 0; r < ROWS; r++) {
        xv[r * COLS] = (uint16_t)r;
        for (int c = 1; c < COLS; c++)
            xv[r * COLS + c] = 0xfc00u; /* -inf */
    }
    clf_executable *exe = NULL;
    ck_assert_int_eq(clf_compile(ctx, g, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_GPU), &exe), CLF_OK);
    ck_assert_msg(strstr(clf_executable_kernel_source(exe, 0), "clf_f16_float") != NULL,
                  "the reduction does not load f16 vectors as raw bits");
    clf_host_binding in[1] = {{"x", xv}}, out[1] = {{"y", yv}};
    ck_assert_int_eq(clf_run_host(exe, 1, in, 1, out), CLF_OK);
    for (int r = 0; r < ROWS; r++) {
        bool nan = (r & 0x7c00) == 0x7c00 && (r & 0x3ff);
        if (nan)
            ck_assert_msg((yv[r] & 0x7c00) == 0x7c00 && (yv[r] & 0x3ff), "pattern %04x: got %04x, not a NaN", r,
                          yv[r]);
        else
            ck_assert_msg(yv[r] == r, "pattern %04x: got %04x", r, yv[r]);
    }
    clf_executable_destroy(&exe);
    clf_graph_destroy(&g);
    /* f16 loaded and cast to f32 at once: the kernel computes in f32 only
     * and still needs the conversion (a build failure on the H200 before
     * the preamble looked at loads). */
    g = clf_graph_create();
    e2e_inputs ein = {0};
    int64_t sc[2] = {64, 32};
    clf_tensor c = clf_cast(g, e2e_input(g, &ein, "x", CLF_F16, 2, sc, -1.0, 1.0), CLF_F32);
    ck_assert_int_eq(clf_graph_output(g, "y", clf_reduce_sum(g, clf_mul(g, c, c), 1, &axis, false)), CLF_OK);
    ck_assert_uint_eq(e2e_check_style(ctx, g, &ein, CLF_KERNEL_STYLE_GPU, 1e-5, 1e-5), 1);
    e2e_inputs_free(&ein);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
    free(xv);
    free(yv);
}
END_TEST

/* y = x @ w for x [16, 8] of 1 + 2^-12 and w [8, 16] of 1: every element
 * 8 in TF32 (1 + 2^-12 rounds to 1), 8 + 2^-9 in f32. Returns y[0]. */
static float tf32_rounding_probe(clf_context *ctx, bool tf32)
{
    clf_graph *g = clf_graph_create();
    int64_t sx[2] = {16, 8}, sw[2] = {8, 16};
    clf_tensor x = clf_input(g, "x", CLF_F32, 2, sx), w = clf_input(g, "w", CLF_F32, 2, sw);
    ck_assert_int_eq(clf_graph_output(g, "y", clf_matmul(g, x, w)), CLF_OK);
    float xv[128], wv[128], yv[256];
    for (int i = 0; i < 128; i++)
        xv[i] = 1.0f + 0x1p-12f, wv[i] = 1.0f;
    clf_executable *exe = NULL;
    ck_assert_int_eq(
        clf_compile(ctx, g, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_GPU, .allow_tf32 = tf32), &exe),
        CLF_OK);
    clf_host_binding in[2] = {{"x", xv}, {"w", wv}}, out[1] = {{"y", yv}};
    ck_assert_int_eq(clf_run_host(exe, 2, in, 1, out), CLF_OK);
    for (int i = 1; i < 256; i++)
        ck_assert_float_eq(yv[i], yv[0]);
    clf_executable_destroy(&exe);
    clf_graph_destroy(&g);
    return yv[0];
}

/* TF32 is opt-in (clf_compile_params.allow_tf32, CLFUSE_TF32 set): f32
 * GEMMs then run in the tensor-core form (emulated where the driver has no
 * PTX) within f16's tolerances (TF32 keeps its 10 mantissa bits), operands
 * rounded as TF32 rounds them; without it, in f32. */
START_TEST(gemm_tensor_cores_tf32)
{
    clf_context *ctx = clf_test_context();
    clf_device_desc dev;
    ck_assert_int_eq(clf_context_device(ctx, &dev), CLF_OK);
    bool nvidia = strstr(dev.platform_name, "NVIDIA") != NULL;
    bool want = runs_groups_of_128(ctx);
    ck_assert_int_eq(setenv("CLFUSE_TENSOR_CORES", "1", 1), 0);
    if (!nvidia)
        ck_assert_int_eq(setenv("CLFUSE_BUILD_OPTIONS", "-DCLF_MMA_EMULATE=1", 1), 0);
    /* Opt-in: the portable form in f32, TF32's rounding where asked. */
    ck_assert_float_eq(tf32_rounding_probe(ctx, false), 8.0f + 0x1p-9f);
    ck_assert_float_eq(tf32_rounding_probe(ctx, true), want ? 8.0f : 8.0f + 0x1p-9f);
    /* CLFUSE_TF32 is a switch as the others are: "0" off, any other
     * value on. */
    ck_assert_int_eq(setenv("CLFUSE_TF32", "0", 1), 0);
    ck_assert_float_eq(tf32_rounding_probe(ctx, false), 8.0f + 0x1p-9f);
    ck_assert_int_eq(setenv("CLFUSE_TF32", "yes", 1), 0);
    ck_assert_float_eq(tf32_rounding_probe(ctx, false), want ? 8.0f : 8.0f + 0x1p-9f);
    for (int c = 0; c < TF32_CASES; c++) {
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        tf32_case(c, g, &in);
        double rt = c == 5 ? 0 : half_rtol(CLF_F16), at = c == 5 ? 0 : gemm_atol(CLF_F16);
        ck_assert_uint_eq(e2e_check_style(ctx, g, &in, CLF_KERNEL_STYLE_GPU, rt, at), 1);
        clf_executable *exe = NULL;
        ck_assert_int_eq(clf_compile(ctx, g, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_GPU), &exe), CLF_OK);
        const char *src = clf_executable_kernel_source(exe, 0);
        bool mma = strstr(src, CLF__MMA_LINE) != NULL;
        ck_assert_msg(mma == want, "case %d: tensor-core form %s on %s", c, mma ? "kept" : "dropped",
                      dev.platform_name);
        ck_assert(!mma || strstr(src, "#define MMA_TF32 1\n"));
        clf_executable_destroy(&exe);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
    unsetenv("CLFUSE_TF32");
    unsetenv("CLFUSE_TENSOR_CORES");
    unsetenv("CLFUSE_BUILD_OPTIONS");
    clf_context_destroy(&ctx);
}
END_TEST

/* TF32 over a long K against the precision compile_params documents:
 * each operand rounded to 10 mantissa bits (a relative error of at most
 * 2^-11 each), products summed in f32, so |got - exact| stays within
 * 2^-10 of sum |a||b| (each term's two roundings) plus f32's summation
 * (K 2^-24 of it), whatever K; and where the tensor-core form runs, the
 * error is TF32's, well above f32's (the opt-in took effect). */
START_TEST(gemm_tf32_long_k_within_documented_bound)
{
    enum { M = 40, N = 48, K = 2048 };
    clf_context *ctx = clf_test_context();
    clf_device_desc dev;
    ck_assert_int_eq(clf_context_device(ctx, &dev), CLF_OK);
    const bool want = runs_groups_of_128(ctx);
    ck_assert_int_eq(setenv("CLFUSE_TENSOR_CORES", "1", 1), 0);
    if (!strstr(dev.platform_name, "NVIDIA"))
        ck_assert_int_eq(setenv("CLFUSE_BUILD_OPTIONS", "-DCLF_MMA_EMULATE=1", 1), 0);
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    ck_assert_int_eq(clf_graph_output(g, "y", clf_matmul(g, input2(g, &in, "a", CLF_F32, M, K),
                                                          input2(g, &in, "b", CLF_F32, K, N))),
                     CLF_OK);
    clf_executable *exe = NULL;
    ck_assert_int_eq(
        clf_compile(ctx, g, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_GPU, .allow_tf32 = true), &exe),
        CLF_OK);
    const bool mma = strstr(clf_executable_kernel_source(exe, 0), CLF__MMA_LINE) != NULL;
    ck_assert_msg(mma == want, "tensor-core form %s on %s", mma ? "kept" : "dropped", dev.platform_name);
    float *got = malloc(sizeof(float) * M * N);
    ck_assert_ptr_nonnull(got);
    clf_host_binding out = {"y", got};
    ck_assert_int_eq(clf_run_host(exe, in.n, in.b, 1, &out), CLF_OK);
    const float *a = e2e_data(&in, "a"), *b = e2e_data(&in, "b");
    double worst = 0.0; /* the largest |got - exact| / sum |a||b| */
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double exact = 0.0, mag = 0.0;
            for (int k = 0; k < K; k++) {
                exact += (double)a[i * K + k] * b[k * N + j];
                mag += fabs((double)a[i * K + k] * b[k * N + j]);
            }
            const double err = fabs(got[i * N + j] - exact);
            ck_assert_msg(err <= (0x1p-10 + K * 0x1p-24) * mag, "y[%d][%d] = %.9g, exact %.9g: error %.3g of sum |a||b| %.6g",
                          i, j, got[i * N + j], exact, err, mag);
            if (err / mag > worst)
                worst = err / mag;
        }
    if (mma)
        ck_assert_msg(worst > 0x1p-18, "the largest error is %.3g of sum |a||b|: f32's, not TF32's", worst);
    else
        ck_assert_msg(worst <= K * 0x1p-24, "no tensor cores, yet the error is %.3g of sum |a||b|", worst);
    free(got);
    clf_executable_destroy(&exe);
    unsetenv("CLFUSE_BUILD_OPTIONS");
    unsetenv("CLFUSE_TENSOR_CORES");
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}
END_TEST

/* clf_gemm on f16 operands computes in f32 through casts; unfused, the
 * casts are stored as f32 buffers by kernels of their own, and the
 * tensor-core form (emulated here) must read those as f32, not as the raw
 * 16-bit stages a plain f16 operand gets (rows of 64 and 24 values, whole
 * 16-byte pieces: it read f32 bits as f16 pairs before). */
START_TEST(gemm_tensor_cores_unfused_casts_are_f32)
{
    clf_context *ctx = clf_test_context();
    ck_assert_int_eq(setenv("CLFUSE_TENSOR_CORES", "1", 1), 0);
    ck_assert_int_eq(setenv("CLFUSE_BUILD_OPTIONS", "-DCLF_MMA_EMULATE=1", 1), 0);
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor a = input2(g, &in, "a", CLF_F16, 17, 64), b = input2(g, &in, "b", CLF_F16, 64, 24);
    ck_assert_int_eq(clf_graph_output(g, "y", clf_gemm(g, a, b, CLF_TENSOR_INVALID, 1.0, 0.0, false, false)),
                     CLF_OK);
    clf_executable *exe = NULL;
    ck_assert_int_eq(clf_compile(ctx, g, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_GPU, .disable_fusion = true),
                                 &exe),
                     CLF_OK);
    uint16_t got[17 * 24], want[17 * 24];
    memset(got, 0xff, sizeof got);
    clf_host_binding go = {"y", got}, wo = {"y", want};
    char msg[256];
    ck_assert_int_eq(clf_reference_run(g, in.n, in.b, 1, &wo, msg, sizeof msg), CLF_OK);
    ck_assert_int_eq(clf_run_host(exe, in.n, in.b, 1, &go), CLF_OK);
    char why[256];
    ck_assert_msg(clf_test_close(CLF_F16, got, want, 17 * 24, half_rtol(CLF_F16), gemm_atol(CLF_F16), why, sizeof why),
                  "%s", why);
    clf_executable_destroy(&exe);
    unsetenv("CLFUSE_BUILD_OPTIONS");
    unsetenv("CLFUSE_TENSOR_CORES");
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}
END_TEST

/* A refused inline-PTX form is turned off alone: with the tensor-core
 * form building (emulated) and the warp shuffles not (any driver but
 * NVIDIA's), a graph with both a GEMM and a softmax keeps the GEMM's
 * tensor cores and lowers the softmax without shuffles (both forms went
 * off together before). NVIDIA builds both; a device with work-groups
 * under 128 takes no tensor-core form. */
START_TEST(refused_shuffles_keep_the_tensor_cores)
{
    clf_context *ctx = clf_test_context();
    bool nvidia = clf_test_on_nvidia(ctx), want_mma = runs_groups_of_128(ctx);
    ck_assert_int_eq(setenv("CLFUSE_TENSOR_CORES", "1", 1), 0);
    ck_assert_int_eq(setenv("CLFUSE_WARP_SHUFFLE", "1", 1), 0);
    ck_assert_int_eq(setenv("CLFUSE_BUILD_OPTIONS", "-DCLF_MMA_EMULATE=1", 1), 0);
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor x = input2(g, &in, "x", CLF_F16, 40, 64), w = input2(g, &in, "w", CLF_F16, 64, 256);
    ck_assert_int_eq(clf_graph_output(g, "y", clf_softmax(g, clf_matmul(g, x, w), -1)), CLF_OK);
    ck_assert_uint_ge(e2e_check_style(ctx, g, &in, CLF_KERNEL_STYLE_GPU, half_rtol(CLF_F16), gemm_atol(CLF_F16)), 2);
    clf_executable *exe = NULL;
    ck_assert_int_eq(clf_compile(ctx, g, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_GPU), &exe), CLF_OK);
    bool mma = false, shfl = false;
    for (size_t k = 0; k < clf_executable_kernel_count(exe); k++) {
        mma = mma || strstr(clf_executable_kernel_source(exe, k), CLF__MMA_LINE) != NULL;
        shfl = shfl || strstr(clf_executable_kernel_source(exe, k), "#define CLF_SHFL 1") != NULL;
    }
    ck_assert_msg(mma == want_mma && shfl == nvidia, "tensor cores %s, shuffles %s", mma ? "kept" : "dropped",
                  shfl ? "kept" : "dropped");
    clf_executable_destroy(&exe);
    unsetenv("CLFUSE_BUILD_OPTIONS");
    unsetenv("CLFUSE_WARP_SHUFFLE");
    unsetenv("CLFUSE_TENSOR_CORES");
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}
END_TEST

/* A plan lowered again because the driver refused the tensor-core form is
 * stored in the plan cache; a compile whose build options let the form
 * build (the emulation) must not take that plan (the build options are in
 * the plan key): the suite failed this way when the fallback test ran
 * first with the same cache directory. */
START_TEST(plan_lowered_again_not_reused_under_other_build_options)
{
    clf_context *ctx = clf_test_context();
    ck_assert_int_eq(setenv("CLFUSE_TENSOR_CORES", "1", 1), 0);
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    tensor_core_case(0, g, &in);
    const char *options[2] = {NULL, "-DCLF_MMA_EMULATE=1"};
    for (int i = 0; i < 2; i++) {
        if (options[i])
            ck_assert_int_eq(setenv("CLFUSE_BUILD_OPTIONS", options[i], 1), 0);
        clf_executable *exe = NULL;
        ck_assert_int_eq(clf_compile(ctx, g, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_GPU), &exe), CLF_OK);
        bool mma = strstr(clf_executable_kernel_source(exe, 0), CLF__MMA_LINE) != NULL;
        bool want = runs_groups_of_128(ctx) && (i == 1 || clf_test_on_nvidia(ctx));
        ck_assert_msg(mma == want, "compile %d: tensor-core form %s", i, mma ? "kept" : "dropped");
        clf_executable_destroy(&exe);
    }
    unsetenv("CLFUSE_BUILD_OPTIONS");
    unsetenv("CLFUSE_TENSOR_CORES");
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}
END_TEST

/* ---- Generated source ---------------------------------------------------- */

static bool is_ident_char(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; }

/* The source with comments blanked out (string literals do not occur in
 * generated OpenCL C). */
static char *strip_comments(const char *src)
{
    size_t n = strlen(src);
    char *s = malloc(n + 1);
    ck_assert_ptr_nonnull(s);
    memcpy(s, src, n + 1);
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '/' && s[i + 1] == '*') {
            size_t j = i;
            while (j < n && !(s[j] == '*' && s[j + 1] == '/'))
                s[j++] = ' ';
            if (j < n)
                s[j] = s[j + 1] = ' ';
            i = j;
        } else if (s[i] == '/' && s[i + 1] == '/') {
            while (i < n && s[i] != '\n')
                s[i++] = ' ';
        }
    }
    return s;
}

/* The identifier that ends just before position end (skipping spaces), as
 * [*from, end'); false when what precedes is not an identifier. */
static bool ident_before(const char *s, size_t end, size_t *from, size_t *to)
{
    size_t j = end;
    while (j > 0 && (s[j - 1] == ' ' || s[j - 1] == '\t' || s[j - 1] == '\n'))
        j--;
    size_t e = j;
    while (j > 0 && is_ident_char(s[j - 1]))
        j--;
    if (j == e)
        return false;
    *from = j;
    *to = e;
    return true;
}

static bool ident_is(const char *s, size_t from, size_t to, const char *word)
{
    return to - from == strlen(word) && strncmp(s + from, word, to - from) == 0;
}

static bool is_address_space(const char *s, size_t from, size_t to)
{
    return ident_is(s, from, to, "__global") || ident_is(s, from, to, "global") ||
           ident_is(s, from, to, "__private") || ident_is(s, from, to, "private");
}

/* Where src uses "half" other than as a pointer to half storage
 * (`__global half *`, `const __global half *`, `__global const half *`,
 * `(__private half *)`) or in a vload_half / vstore_half call (vloada_,
 * vstorea_, any width, any rounding suffix): NULL if nowhere, else a
 * message with the context (static storage). Also refuses cl_khr_fp16. */
static const char *half_arithmetic_in(const char *src)
{
    static char why[512];
    if (strstr(src, "cl_khr_fp16")) {
        snprintf(why, sizeof why, "the source names cl_khr_fp16");
        return why;
    }
    char *s = strip_comments(src);
    size_t n = strlen(s);
    const char *bad = NULL;
    for (size_t i = 0; i < n && !bad;) {
        if (!is_ident_char(s[i]) || (i > 0 && is_ident_char(s[i - 1]))) {
            i++;
            continue;
        }
        size_t e = i;
        while (e < n && is_ident_char(s[e]))
            e++;
        size_t len = e - i;
        char word[64];
        snprintf(word, sizeof word, "%.*s", (int)(len < 63 ? len : 63), s + i);
        if (strstr(word, "half")) {
            size_t k = e;
            while (k < n && (s[k] == ' ' || s[k] == '\t' || s[k] == '\n'))
                k++;
            bool type = strcmp(word, "half") == 0;
            for (const char *w = word + 4; type == false && strncmp(word, "half", 4) == 0 && *w; w++)
                if (*w < '0' || *w > '9')
                    break;
                else if (!w[1])
                    type = true; /* half2, half4, ... */
            bool ok;
            if (type) {
                size_t f1, t1, f2, t2;
                ok = k < n && s[k] == '*' && ident_before(s, i, &f1, &t1) &&
                     (is_address_space(s, f1, t1) ||
                      (ident_is(s, f1, t1, "const") && ident_before(s, f1, &f2, &t2) && is_address_space(s, f2, t2)));
            } else {
                ok = (strncmp(word, "vload_half", 10) == 0 || strncmp(word, "vstore_half", 11) == 0 ||
                      strncmp(word, "vloada_half", 11) == 0 || strncmp(word, "vstorea_half", 12) == 0) &&
                     k < n && s[k] == '(';
            }
            if (!ok) {
                size_t from = i > 80 ? i - 80 : 0;
                snprintf(why, sizeof why, "\"%s\" outside a half pointer type or vload_half/vstore_half call: ...%.*s...",
                         word, (int)(e + 40 < n ? e + 40 - from : n - from), s + from);
                bad = why;
            }
        }
        i = e;
    }
    free(s);
    return bad;
}

START_TEST(source_checker_accepts_and_refuses)
{
    ck_assert_ptr_null(half_arithmetic_in("__kernel void k(const __global half *restrict b0, __global half *o) {\n"
                                          "  float v = vload_half(i, b0); vstore_half_rte(v, i, o);\n"
                                          "  float4 w = vload_half4(0, (__private half *)&t); /* half */ }"));
    ck_assert_ptr_null(half_arithmetic_in("__global const half *p; vstorea_half4_rte (w, 0, p);"));
    ck_assert_ptr_nonnull(half_arithmetic_in("half x = vload_half(0, p);"));
    ck_assert_ptr_nonnull(half_arithmetic_in("float y = (float)(half)x;"));
    ck_assert_ptr_nonnull(half_arithmetic_in("half4 v;"));
    ck_assert_ptr_nonnull(half_arithmetic_in("float y = half_exp(x);"));
    ck_assert_ptr_nonnull(half_arithmetic_in("#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n"));
    ck_assert_ptr_nonnull(half_arithmetic_in("#define T0 half\n__global T0 *p;"));
    ck_assert_ptr_nonnull(half_arithmetic_in("__local half *p;"));
}
END_TEST

/* The kernels of graphs of every family on f16 and on bf16, as codegen
 * writes them for a CPU device and for GPUs (with and without fp64, NVIDIA
 * warp shuffles, tensor cores), fused and unfused: pointwise chains, casts both ways,
 * where, gather, concat, row reductions, a split reduction (few long
 * rows), softmax over short rows and over long ones (the online form),
 * layer norm, argmax, GEMM with an epilogue and a prologue. No half
 * arithmetic (see half_arithmetic_in) and no cl_khr_fp16 anywhere; the f16
 * kernels do load and store through vload_half/vstore_half. Codegen runs
 * without the device (as in the codegen suite), so nothing is built. */
START_TEST(generated_source_has_no_half_arithmetic)
{
    const clf__codegen_target targets[5] = {
        {.cpu = true, .fp64 = true, .compute_units = 2},
        {.cpu = true, .fp64 = false, .compute_units = 2},
        {.cpu = false, .fp64 = true, .max_local = 1024, .compute_units = 132, .local_mem = 228 * 1024,
         .warp_shuffle = true},
        {.cpu = false, .fp64 = false, .max_local = 256, .compute_units = 8, .local_mem = 32 * 1024},
        {.cpu = false, .fp64 = true, .max_local = 1024, .compute_units = 132, .local_mem = 228 * 1024,
         .warp_shuffle = true, .tensor_cores = true},
    };
    for (int d = 0; d < 2; d++) {
        clf_dtype dt = HALF_DTYPES[d];
        int64_t s[2] = {8, 40}, ws[2] = {40, 24}, bs[1] = {24}, sl[2] = {2, 100000}, so[2] = {3, 20001}, si[1] = {5};
        int last = -1;
        clf_graph *g = clf_graph_create();
        clf_tensor x = clf_input(g, "x", dt, 2, s), y = clf_input(g, "y", dt, 2, s);
        clf_tensor w = clf_input(g, "w", dt, 2, ws), b = clf_input(g, "b", dt, 1, bs);
        clf_tensor xf = clf_input(g, "xf", CLF_F32, 2, s), c = clf_input(g, "c", CLF_BOOL, 2, s);
        clf_tensor xl = clf_input(g, "xl", dt, 2, sl), xo = clf_input(g, "xo", dt, 2, so);
        clf_tensor idx = clf_input(g, "idx", CLF_I32, 1, si);
        clf_graph_output(g, "chain", clf_exp(g, clf_relu(g, clf_add(g, clf_mul(g, x, y), x))));
        clf_graph_output(g, "to_half", clf_cast(g, clf_tanh(g, xf), dt));
        clf_graph_output(g, "to_f32", clf_add(g, clf_cast(g, y, CLF_F32), xf));
        clf_graph_output(g, "where", clf_where(g, c, clf_clip(g, x, -1.0, 1.0), clf_neg(g, y)));
        clf_tensor xy[2] = {x, y};
        clf_graph_output(g, "concat", clf_concat(g, 2, xy, 0));
        clf_graph_output(g, "gather", clf_gather(g, y, idx, 1));
        clf_graph_output(g, "sum", clf_reduce_sum(g, clf_mul(g, x, x), 1, &last, false));
        clf_graph_output(g, "max", clf_reduce_max(g, y, 1, &last, true));
        clf_graph_output(g, "mean", clf_reduce_mean(g, y, 1, &last, false));
        clf_graph_output(g, "argmax", clf_argmax(g, x, 1, false, false));
        clf_graph_output(g, "softmax", clf_softmax(g, y, -1));
        clf_graph_output(g, "layer_norm", clf_layer_norm(g, x, -1, 1e-5, CLF_TENSOR_INVALID, CLF_TENSOR_INVALID));
        clf_graph_output(g, "long_sum", clf_reduce_sum(g, xl, 1, &last, false));
        clf_graph_output(g, "long_softmax", clf_softmax(g, xo, -1));
        clf_tensor a = clf_tanh(g, clf_mul(g, x, clf_scalar(g, dt, 0.5)));
        clf_graph_output(g, "linear", clf_relu(g, clf_add(g, clf_matmul(g, a, w), b)));
        const char *msg = "";
        ck_assert_msg(clf_graph_status(g, &msg) == CLF_OK, "%s", msg);
        bool loads = false, stores = false;
        size_t kernels = 0;
        for (int fuse = 0; fuse < 2; fuse++) {
            clf__plan p;
            char err[256] = "";
            clf__plan_options o = {.disable_fusion = !fuse};
            ck_assert_msg(clf__plan_build(g, &o, &p, err, sizeof err) == CLF_OK, "plan: %s", err);
            for (int t = 0; t < 5; t++)
                for (uint32_t k = 0; k < p.nkernels; k++) {
                    clf__kernel_code code;
                    ck_assert_msg(clf__codegen_kernel(g, &p, k, &targets[t], &code, err, sizeof err) == CLF_OK,
                                  "codegen: %s", err);
                    const char *why = half_arithmetic_in(code.source);
                    ck_assert_msg(why == NULL, "%s, %s, target %d, kernel %s: %s", clf_dtype_name(dt),
                                  fuse ? "fused" : "unfused", t, code.name, why);
                    loads = loads || strstr(code.source, "vload_half") || strstr(code.source, "vloada_half");
                    stores = stores || strstr(code.source, "vstore_half") || strstr(code.source, "vstorea_half");
                    kernels++;
                    clf__kernel_code_free(&code);
                }
            clf__plan_free(&p);
        }
        ck_assert_uint_ge(kernels, 8);
        if (dt == CLF_F16)
            ck_assert_msg(loads && stores, "f16 kernels without vload_half (%d) or vstore_half (%d)", loads, stores);
        clf_graph_destroy(&g);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("half");
    clf_test_add_case(s, "dtype_names_and_sizes", dtype_names_and_sizes);
    clf_test_add_case(s, "test_helpers_convert_and_compare_half", test_helpers_convert_and_compare_half);
    clf_test_add_case(s, "host_conversions_known_bits", host_conversions_known_bits);
    clf_test_add_case(s, "every_float_unary_op_f16", every_float_unary_op_f16);
    clf_test_add_variant_case(s, "every_float_unary_op_bf16", every_float_unary_op_bf16);
    clf_test_add_case(s, "every_float_binary_op_f16", every_float_binary_op_f16);
    clf_test_add_variant_case(s, "every_float_binary_op_bf16", every_float_binary_op_bf16);
    clf_test_add_case(s, "selection_and_movement_ops_are_exact", selection_and_movement_ops_are_exact);
    clf_test_add_case(s, "casts_between_all_36_dtype_pairs", casts_between_all_36_dtype_pairs);
    clf_test_add_case(s, "scalars_and_constants_round_like_cast", scalars_and_constants_round_like_cast);
    clf_test_add_case(s, "f16_cast_to_f32_computed_and_cast_back_one_kernel",
                      f16_cast_to_f32_computed_and_cast_back_one_kernel);
    clf_test_add_case(s, "half_chain_rounds_every_node_in_one_kernel", half_chain_rounds_every_node_in_one_kernel);
    clf_test_add_case(s, "mixed_dtype_operands_are_refused", mixed_dtype_operands_are_refused);
    clf_test_add_case(s, "reductions_all_forms", reductions_all_forms);
    clf_test_add_case(s, "few_long_rows_split", few_long_rows_split);
    clf_test_add_case(s, "million_element_sum_and_mean_are_accurate", million_element_sum_and_mean_are_accurate);
    clf_test_add_case(s, "softmax_of_rows_near_the_f16_maximum", softmax_of_rows_near_the_f16_maximum);
    clf_test_add_variant_case(s, "norms_of_rows_near_the_f16_maximum", norms_of_rows_near_the_f16_maximum);
    clf_test_add_case(s, "linear_relu_edge_shapes", linear_relu_edge_shapes);
    clf_test_add_case(s, "long_k_products", long_k_products);
    clf_test_add_case(s, "aligned_vector_loads_keep_every_f16_pattern", aligned_vector_loads_keep_every_f16_pattern);
    clf_test_add_case(s, "gemm_transposes_and_batches", gemm_transposes_and_batches);
    clf_test_add_case(s, "gemm_with_k_zero_is_the_bias", gemm_with_k_zero_is_the_bias);
    clf_test_add_case(s, "gemm_prologue_and_epilogue_one_kernel", gemm_prologue_and_epilogue_one_kernel);
    clf_test_add_case(s, "gemm_tensor_cores_a_driver_refuses_fall_back", gemm_tensor_cores_a_driver_refuses_fall_back);
    clf_test_add_case(s, "gemm_tensor_cores_emulated", gemm_tensor_cores_emulated);
    clf_test_add_variant_case(s, "gemm_tensor_cores_pinned_tilings", gemm_tensor_cores_pinned_tilings);
    clf_test_add_variant_case(s, "gemm_tensor_cores_autotuned", gemm_tensor_cores_autotuned);
    clf_test_add_variant_case(s, "gemm_tensor_cores_tf32", gemm_tensor_cores_tf32);
    clf_test_add_case(s, "gemm_tf32_long_k_within_documented_bound", gemm_tf32_long_k_within_documented_bound);
    clf_test_add_case(s, "gemm_tensor_cores_unfused_casts_are_f32", gemm_tensor_cores_unfused_casts_are_f32);
    clf_test_add_case(s, "refused_shuffles_keep_the_tensor_cores", refused_shuffles_keep_the_tensor_cores);
    clf_test_add_case(s, "plan_lowered_again_not_reused_under_other_build_options",
                      plan_lowered_again_not_reused_under_other_build_options);
    clf_test_add_case(s, "source_checker_accepts_and_refuses", source_checker_accepts_and_refuses);
    clf_test_add_case(s, "generated_source_has_no_half_arithmetic", generated_source_has_no_half_arithmetic);
    return clf_test_run_suite(s);
}
