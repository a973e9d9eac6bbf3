/* erf for float and its vectors, in plain arithmetic that vectorises: no
 * call, no exp (PoCL's erf costs about 75 ns of a CPU core and its exp
 * does not vectorise either: a GELU epilogue took 6x its GEMM), the same
 * on every device. Codegen includes this file in a kernel whose ops call
 * clf_erf (the op table's gelu and erf rows).
 *
 * |x| < 1: x * P(x^2), P of degree 7; then erf = 1 - erfc(|x|) with erfc
 * a polynomial in |x| - centre on [1, 2) (degree 8), [2, 3) (7) and
 * [3, 3.95) (6), |x| clamped at 3.95 (erfc(3.95) = 1.1e-8: erf is 1 in
 * float past it); the sign of x; NaN stays NaN. Least-squares fits on
 * Chebyshev nodes (double), coefficients rounded to float: at most 2.5 ulp
 * from the correctly rounded erf over [-5, 5] and down to 1e-40 in float
 * arithmetic, 0.9 ulp past |x| = 1 (OpenCL allows erf 16 ulp). Macros,
 * since OpenCL C 1.2 has no overloading: the argument is evaluated several
 * times (the compiler keeps one copy of a pure expression). */
#define CLF_ERF_P(t) (1.128379226e+00f + (t) * (-3.761263788e-01f + (t) * (1.128378287e-01f + (t) * (     \
    -2.686543763e-02f + (t) * (5.221053492e-03f + (t) * (-8.484398131e-04f + (t) * (                      \
    1.126825955e-04f + (t) * (-9.673594832e-06f))))))))
#define CLF_ERFC_1(d) (3.389485180e-02f + (d) * (-1.189300716e-01f + (d) * (1.783954203e-01f + (d) * (    \
    -1.387634873e-01f + (d) * (4.459944740e-02f + (d) * (1.503333170e-02f + (d) * (                       \
    -1.933342963e-02f + (d) * (3.834618721e-03f + (d) * (2.401931677e-03f)))))))))
#define CLF_ERFC_2(d) (4.069612478e-04f + (d) * (-2.178318100e-03f + (d) * (5.444540177e-03f + (d) * (    \
    -8.348285221e-03f + (d) * (8.645453490e-03f + (d) * (-6.143385079e-03f + (d) * (                      \
    2.655043034e-03f + (d) * (-4.030323180e-04f))))))))
#define CLF_ERFC_3(d) (8.897703196e-07f + (d) * (-6.519268936e-06f + (d) * (2.245230644e-05f + (d) * (    \
    -4.640653424e-05f + (d) * (7.621273107e-05f + (d) * (-1.222941501e-04f + (d) * (                      \
    1.062815645e-04f)))))))
#define CLF_ERF_A(x) fmin(fabs(x), 3.95f)
#define CLF_ERFC(a)                                                                                     \
    select(select(CLF_ERFC_1((a) - 1.5f), CLF_ERFC_2((a) - 2.5f), (a) >= 2.0f), CLF_ERFC_3((a) - 3.475f),     \
           (a) >= 3.0f)
#define clf_erf(x)                                                                                       \
    select(select(copysign(1.0f - CLF_ERFC(CLF_ERF_A(x)), (x)), (x) * CLF_ERF_P((x) * (x)), fabs(x) < 1.0f), \
           (x), isnan(x))
