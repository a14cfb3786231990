// The scalar math the element functors use, spelled so one header compiles on
// the host and (later) in CUDA device code: C library names, which both sides
// provide, instead of std:: overloads. Complex math is host-only here; a device
// build brings its own complex type and overloads under the same names.
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define ALLOY_HD __host__ __device__
#else
#define ALLOY_HD
#include <math.h>

#include <complex>
#endif

#if defined(__CUDACC_RTC__)
// NVRTC has no standard library: the device types and traits come from the
// CUDA backend's device headers (src/backend/cuda/device/device_types.cuh).
#include "device_types.cuh"
#else
#include <type_traits>

#include "alloy/dtype.h"
#endif

namespace alloy::math {

// Kinds as bits, so a set of accepted kinds is one constexpr integer.
enum KindBits : unsigned {
  kBool = 1u << 0,
  kUnsigned = 1u << 1,
  kSigned = 1u << 2,
  kFloat = 1u << 3,
  kComplex = 1u << 4,
  kInt = kUnsigned | kSigned,
  kReal = kUnsigned | kSigned | kFloat,
  kNumber = kReal | kComplex,
  kAny = kBool | kNumber,
};

template <typename T>
struct is_complex : std::false_type {};
template <typename T>
struct is_complex<std::complex<T>> : std::true_type {};
template <typename T>
inline constexpr bool is_complex_v = is_complex<T>::value;

template <typename T>
struct real_type {
  using type = T;
};
template <typename T>
struct real_type<std::complex<T>> {
  using type = T;
};

template <typename T>
inline constexpr bool is_half_v = std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>;

template <typename T>
constexpr unsigned kind_bit() {
  if constexpr (std::is_same_v<T, bool>) return kBool;
  else if constexpr (is_complex_v<T>) return kComplex;
  else if constexpr (is_half_v<T> || std::is_floating_point_v<T>) return kFloat;
  else if constexpr (std::is_unsigned_v<T>) return kUnsigned;
  else return kSigned;
}

#if !defined(__CUDACC_RTC__)
inline unsigned kind_bit(Dtype d) {
  switch (kind_of(d)) {
    case DtypeKind::Bool: return kBool;
    case DtypeKind::Unsigned: return kUnsigned;
    case DtypeKind::Signed: return kSigned;
    case DtypeKind::Floating: return kFloat;
    case DtypeKind::Complex: return kComplex;
  }
  return 0;
}
#endif

// 16-bit floats compute in float; everything else in its own type.
template <typename T>
struct compute_type {
  using type = T;
};
template <>
struct compute_type<float16_t> {
  using type = float;
};
template <>
struct compute_type<bfloat16_t> {
  using type = float;
};
template <typename T>
using compute_t = typename compute_type<T>::type;

// Integers of the same width for wrap-around arithmetic (signed overflow is UB).
template <typename T, bool = std::is_integral_v<T> && !std::is_same_v<T, bool>>
struct wrap_type {
  using type = T;
};
template <typename T>
struct wrap_type<T, true> {
  using type = std::make_unsigned_t<T>;
};
template <typename T>
using wrap_t = typename wrap_type<T>::type;

#define ALLOY_MATH_FN(name, fname, dname)                         \
  ALLOY_HD inline float name(float x) { return ::fname(x); }      \
  ALLOY_HD inline double name(double x) { return ::dname(x); }
ALLOY_MATH_FN(exp, expf, exp)
ALLOY_MATH_FN(expm1, expm1f, expm1)
ALLOY_MATH_FN(log, logf, log)
ALLOY_MATH_FN(log1p, log1pf, log1p)
ALLOY_MATH_FN(log2, log2f, log2)
ALLOY_MATH_FN(log10, log10f, log10)
ALLOY_MATH_FN(sin, sinf, sin)
ALLOY_MATH_FN(cos, cosf, cos)
ALLOY_MATH_FN(tan, tanf, tan)
ALLOY_MATH_FN(asin, asinf, asin)
ALLOY_MATH_FN(acos, acosf, acos)
ALLOY_MATH_FN(atan, atanf, atan)
ALLOY_MATH_FN(sinh, sinhf, sinh)
ALLOY_MATH_FN(cosh, coshf, cosh)
ALLOY_MATH_FN(tanh, tanhf, tanh)
ALLOY_MATH_FN(asinh, asinhf, asinh)
ALLOY_MATH_FN(acosh, acoshf, acosh)
ALLOY_MATH_FN(atanh, atanhf, atanh)
ALLOY_MATH_FN(sqrt, sqrtf, sqrt)
ALLOY_MATH_FN(floor, floorf, floor)
ALLOY_MATH_FN(ceil, ceilf, ceil)
ALLOY_MATH_FN(rint, rintf, rint)  // round half to even, as numpy and MLX
ALLOY_MATH_FN(fabs, fabsf, fabs)
ALLOY_MATH_FN(erf, erff, erf)
#undef ALLOY_MATH_FN

#define ALLOY_MATH_FN2(name, fname, dname)                                    \
  ALLOY_HD inline float name(float x, float y) { return ::fname(x, y); }      \
  ALLOY_HD inline double name(double x, double y) { return ::dname(x, y); }
ALLOY_MATH_FN2(pow, powf, pow)
ALLOY_MATH_FN2(fmod, fmodf, fmod)
ALLOY_MATH_FN2(atan2, atan2f, atan2)
ALLOY_MATH_FN2(copysign, copysignf, copysign)
#undef ALLOY_MATH_FN2

// NaN/inf tests that survive -ffast-math style builds and work on any real type.
template <typename T>
ALLOY_HD inline bool isnan(T x) {
  if constexpr (std::is_floating_point_v<T>) return x != x;
  else return false;
}
template <typename T>
ALLOY_HD inline bool isinf(T x) {
  if constexpr (std::is_floating_point_v<T>) return x == T(1.0 / 0.0) || x == T(-1.0 / 0.0);
  else return false;
}

template <typename T>
ALLOY_HD inline T inf() {
  return T(1.0 / 0.0);
}

// MLX's order of values: complex numbers by real part, then imaginary part
// (lexicographically, as its max, sort and comparisons take them). NaNs are
// the caller's to place.
template <typename T>
ALLOY_HD inline bool less(T a, T b) {
  if constexpr (is_complex_v<T>) return a.real() < b.real() || (a.real() == b.real() && a.imag() < b.imag());
  else return a < b;
}
template <typename T>
ALLOY_HD inline bool greater(T a, T b) {
  return less(b, a);
}
template <typename T>
ALLOY_HD inline auto real_part(T x) {
  if constexpr (is_complex_v<T>) return x.real();
  else return x;
}

// The smallest and largest values of a compute type (infinities for floats;
// for complex, both parts infinite, below or above every number in MLX's order).
template <typename T>
ALLOY_HD constexpr T lowest() {
  if constexpr (is_complex_v<T>) return T(lowest<typename real_type<T>::type>(), lowest<typename real_type<T>::type>());
  else if constexpr (std::is_same_v<T, bool>) return false;
  else if constexpr (std::is_floating_point_v<T>) return -T(1.0 / 0.0);
  else if constexpr (std::is_signed_v<T>) return T(T(1) << (sizeof(T) * 8 - 1));
  else return T(0);
}
template <typename T>
ALLOY_HD constexpr T highest() {
  if constexpr (is_complex_v<T>) return T(highest<typename real_type<T>::type>(), highest<typename real_type<T>::type>());
  else if constexpr (std::is_same_v<T, bool>) return true;
  else if constexpr (std::is_floating_point_v<T>) return T(1.0 / 0.0);
  else if constexpr (std::is_signed_v<T>) return T(~lowest<T>());
  else return T(~T(0));
}

// Inverse error function: a rational first guess refined by Newton steps on
// erf, accurate to the last bit of float and close to it for double.
template <typename T>
ALLOY_HD inline T erfinv(T y) {
  if (y <= T(-1)) return y == T(-1) ? -inf<T>() : T(0.0 / 0.0);
  if (y >= T(1)) return y == T(1) ? inf<T>() : T(0.0 / 0.0);
  // Giles' single-precision approximation as the starting point.
  double w = -::log((1.0 - double(y)) * (1.0 + double(y)));
  double x;
  if (w < 5.0) {
    w -= 2.5;
    double p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
    x = p * double(y);
  } else {
    w = ::sqrt(w) - 3.0;
    double p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
    x = p * double(y);
  }
  // Newton on erf(x) - y; two steps reach double precision from ~1e-7.
  const double two_over_sqrt_pi = 1.1283791670955126;
  for (int i = 0; i < 2; ++i) {
    double err = ::erf(x) - double(y);
    x -= err / (two_over_sqrt_pi * ::exp(-x * x));
  }
  return T(x);
}

#if !defined(__CUDACC__) && !defined(__CUDACC_RTC__)
// Host complex math (std::complex is the host's complex type).
template <typename T>
inline std::complex<T> exp(std::complex<T> z) { return std::exp(z); }
template <typename T>
inline std::complex<T> log(std::complex<T> z) { return std::log(z); }
template <typename T>
inline std::complex<T> log1p(std::complex<T> z) { return std::log(z + T(1)); }
template <typename T>
inline std::complex<T> log10(std::complex<T> z) { return std::log10(z); }
template <typename T>
inline std::complex<T> sin(std::complex<T> z) { return std::sin(z); }
template <typename T>
inline std::complex<T> cos(std::complex<T> z) { return std::cos(z); }
template <typename T>
inline std::complex<T> tan(std::complex<T> z) { return std::tan(z); }
template <typename T>
inline std::complex<T> asin(std::complex<T> z) { return std::asin(z); }
template <typename T>
inline std::complex<T> acos(std::complex<T> z) { return std::acos(z); }
template <typename T>
inline std::complex<T> atan(std::complex<T> z) { return std::atan(z); }
template <typename T>
inline std::complex<T> sinh(std::complex<T> z) { return std::sinh(z); }
template <typename T>
inline std::complex<T> cosh(std::complex<T> z) { return std::cosh(z); }
template <typename T>
inline std::complex<T> tanh(std::complex<T> z) { return std::tanh(z); }
template <typename T>
inline std::complex<T> asinh(std::complex<T> z) { return std::asinh(z); }
template <typename T>
inline std::complex<T> acosh(std::complex<T> z) { return std::acosh(z); }
template <typename T>
inline std::complex<T> atanh(std::complex<T> z) { return std::atanh(z); }
template <typename T>
inline std::complex<T> sqrt(std::complex<T> z) { return std::sqrt(z); }
template <typename T>
inline std::complex<T> pow(std::complex<T> a, std::complex<T> b) { return std::pow(a, b); }
template <typename T>
inline T abs(std::complex<T> z) { return std::abs(z); }
template <typename T>
inline std::complex<T> conj(std::complex<T> z) { return std::conj(z); }
template <typename T>
inline bool isnan(std::complex<T> z) { return isnan(z.real()) || isnan(z.imag()); }
template <typename T>
inline bool isinf(std::complex<T> z) { return isinf(z.real()) || isinf(z.imag()); }
#endif

}  // namespace alloy::math
