// What the shared element headers (src/backend/common/*_ops.h) need on the
// device, for NVRTC: fixed-width integers, the <type_traits> subset, the
// dtype C++ types (float16_t = __half, bfloat16_t = __nv_bfloat16,
// complex64_t = a two-float struct) and complex math under the names the
// functors call (math::exp, math::abs ...). math_shim.h includes this in
// place of alloy/dtype.h when compiled by NVRTC; it must come before the
// functors are parsed, because `math::f(x)` finds only overloads declared
// before the template that calls it.
#pragma once

#if !defined(__CUDACC_RTC__)
#error "device_types.cuh is compiled by NVRTC only"
#endif

#include "nvrtc_stdint.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "std_shim.cuh"

namespace std {

// complex64's device representation: the same layout as the host's
// std::complex<float> (two floats, real first).
template <class T>
struct complex {
  using value_type = T;
  T re, im;
  __host__ __device__ constexpr complex(T r = T(), T i = T()) : re(r), im(i) {}
  template <class U>
  __host__ __device__ constexpr explicit complex(const complex<U>& o) : re(T(o.re)), im(T(o.im)) {}
  __host__ __device__ constexpr T real() const { return re; }
  __host__ __device__ constexpr T imag() const { return im; }
  __host__ __device__ complex& operator+=(complex o) { re += o.re; im += o.im; return *this; }
  __host__ __device__ complex& operator-=(complex o) { re -= o.re; im -= o.im; return *this; }
  __host__ __device__ complex& operator*=(complex o) { return *this = *this * o; }
  __host__ __device__ complex& operator/=(complex o) { return *this = *this / o; }
  __host__ __device__ friend complex operator+(complex a, complex b) { return {a.re + b.re, a.im + b.im}; }
  __host__ __device__ friend complex operator-(complex a, complex b) { return {a.re - b.re, a.im - b.im}; }
  __host__ __device__ friend complex operator*(complex a, complex b) {
    return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
  }
  // Smith's algorithm: no overflow for large denominators.
  __host__ __device__ friend complex operator/(complex a, complex b) {
    if (fabs(b.re) >= fabs(b.im)) {
      T r = b.im / b.re, d = b.re + b.im * r;
      return {(a.re + a.im * r) / d, (a.im - a.re * r) / d};
    }
    T r = b.re / b.im, d = b.re * r + b.im;
    return {(a.re * r + a.im) / d, (a.im * r - a.re) / d};
  }
  __host__ __device__ friend complex operator/(complex a, T s) { return {a.re / s, a.im / s}; }
  __host__ __device__ friend complex operator*(complex a, T s) { return {a.re * s, a.im * s}; }
  __host__ __device__ friend complex operator-(complex a) { return {-a.re, -a.im}; }
  __host__ __device__ friend complex operator+(complex a) { return a; }
  __host__ __device__ friend bool operator==(complex a, complex b) { return a.re == b.re && a.im == b.im; }
  __host__ __device__ friend bool operator!=(complex a, complex b) { return !(a == b); }
};

}  // namespace std

namespace alloy {

using float16_t = __half;
using bfloat16_t = __nv_bfloat16;
using complex64_t = std::complex<float>;

namespace math {

// complex64 math (the host uses std::complex's; these follow the same
// principal branches).
using cf = std::complex<float>;
__device__ inline float abs(cf z) { return ::hypotf(z.re, z.im); }
__device__ inline cf conj(cf z) { return {z.re, -z.im}; }
__device__ inline bool isnan(cf z) { return z.re != z.re || z.im != z.im; }
__device__ inline bool isinf(cf z) { return ::isinf(z.re) || ::isinf(z.im); }
__device__ inline cf exp(cf z) {
  float e = ::expf(z.re), s, c;
  ::sincosf(z.im, &s, &c);
  return {e * c, e * s};
}
__device__ inline cf log(cf z) { return {::logf(::hypotf(z.re, z.im)), ::atan2f(z.im, z.re)}; }
__device__ inline cf log1p(cf z) { return log(cf{z.re + 1.0f, z.im}); }
__device__ inline cf log10(cf z) {
  cf l = log(z);
  return {l.re * 0.43429448190325176f, l.im * 0.43429448190325176f};
}
__device__ inline cf sqrt(cf z) {
  if (z.re == 0.0f && z.im == 0.0f) return {0.0f, z.im};
  if (::isinf(z.im)) return {__int_as_float(0x7f800000), z.im};
  float t = ::sqrtf((::fabsf(z.re) + ::hypotf(z.re, z.im)) * 0.5f);
  if (z.re >= 0.0f) return {t, z.im / (2.0f * t)};
  return {::fabsf(z.im) / (2.0f * t), ::copysignf(t, z.im)};
}
__device__ inline cf sin(cf z) { return {::sinf(z.re) * ::coshf(z.im), ::cosf(z.re) * ::sinhf(z.im)}; }
__device__ inline cf cos(cf z) { return {::cosf(z.re) * ::coshf(z.im), -::sinf(z.re) * ::sinhf(z.im)}; }
__device__ inline cf sinh(cf z) { return {::sinhf(z.re) * ::cosf(z.im), ::coshf(z.re) * ::sinf(z.im)}; }
__device__ inline cf cosh(cf z) { return {::coshf(z.re) * ::cosf(z.im), ::sinhf(z.re) * ::sinf(z.im)}; }
__device__ inline cf tanh(cf z) {
  if (::fabsf(z.re) > 20.0f) return {::copysignf(1.0f, z.re), ::copysignf(0.0f, ::sinf(2.0f * z.im))};
  float d = ::coshf(2.0f * z.re) + ::cosf(2.0f * z.im);
  return {::sinhf(2.0f * z.re) / d, ::sinf(2.0f * z.im) / d};
}
__device__ inline cf tan(cf z) {  // tan z = -i tanh(i z)
  cf t = tanh(cf{-z.im, z.re});
  return {t.im, -t.re};
}
__device__ inline cf asinh(cf z) { return log(z + sqrt(z * z + cf{1.0f, 0.0f})); }
__device__ inline cf asin(cf z) {  // asin z = -i asinh(i z)
  cf t = asinh(cf{-z.im, z.re});
  return {t.im, -t.re};
}
__device__ inline cf acos(cf z) {
  cf a = asin(z);
  return {1.5707963267948966f - a.re, -a.im};
}
__device__ inline cf acosh(cf z) { return log(z + sqrt(z + cf{1.0f, 0.0f}) * sqrt(z - cf{1.0f, 0.0f})); }
__device__ inline cf atanh(cf z) {
  cf one{1.0f, 0.0f};
  cf l = log(one + z) - log(one - z);
  return {0.5f * l.re, 0.5f * l.im};
}
__device__ inline cf atan(cf z) {  // atan z = -i atanh(i z)
  cf t = atanh(cf{-z.im, z.re});
  return {t.im, -t.re};
}
__device__ inline cf pow(cf a, cf b) {
  if (a.re == 0.0f && a.im == 0.0f) {
    if (b.re == 0.0f && b.im == 0.0f) return {1.0f, 0.0f};
    return {0.0f, 0.0f};
  }
  return exp(b * log(a));
}

}  // namespace math
}  // namespace alloy
