// CUDA target: Metal's `half` as a 16-bit struct (NVRTC has no native 16-bit
// float type, and cuda_fp16.h costs ~25 ms of parse time per compile and has
// mixed-type operators that are ambiguous with Metal's rules).
//
// Conversions: from any arithmetic type, and to float, double, the integers
// and bool, all implicitly, as Metal converts scalars (`int i = h;`). With
// both directions implicit C++ finds a conditional such as `cond ? h : 0` or
// `cond ? h : f` ambiguous; the translator gives every conditional whose
// arms are scalars of two types Metal's common type (alloy_msl::cond_arm
// and cond_t, metal_base.h).
//
// Arithmetic (cuda_half_ops.h) computes in float and rounds once; for + - * /
// that is the correctly rounded half result.
#pragma once

#include "metal_integral.h"

namespace metal {
namespace half_detail {
template <class T> inline constexpr bool is_fp = false;
template <> inline constexpr bool is_fp<float> = true;
template <> inline constexpr bool is_fp<double> = true;
template <bool B> struct enable {};
template <> struct enable<true> { typedef int type; };

// Round-to-nearest-even float -> binary16, for constant evaluation.
__device__ constexpr unsigned short float_to_half_bits(float f) {
  unsigned x = __builtin_bit_cast(unsigned, f);
  unsigned sign = (x >> 16) & 0x8000u;
  unsigned ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return (unsigned short)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));  // NaN stays NaN
  if (ax >= 0x477ff000u) return (unsigned short)(sign | 0x7c00u);  // >= 65520 rounds to inf
  if (ax < 0x38800000u) {                                           // half subnormal or zero
    if (ax <= 0x33000000u) return (unsigned short)sign;             // <= 2^-25 rounds to 0
    unsigned e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u, shift = 126u - e;
    unsigned q = m >> shift, rem = m & ((1u << shift) - 1u), mid = 1u << (shift - 1u);
    if (rem > mid || (rem == mid && (q & 1u))) ++q;
    return (unsigned short)(sign | q);
  }
  unsigned r = ax - 0x38000000u;  // rebias the exponent from 127 to 15
  unsigned q = r >> 13, rem = r & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) ++q;
  return (unsigned short)(sign | q);
}
__device__ constexpr float half_bits_to_float(unsigned short h) {
  unsigned sign = unsigned(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1fu) return __builtin_bit_cast(float, sign | 0x7f800000u | (m << 13));
  if (e == 0) {
    float v = float(m) * 5.9604644775390625e-8f;  // m * 2^-24, exact
    return sign ? -v : v;
  }
  return __builtin_bit_cast(float, sign | ((e + 112u) << 23) | (m << 13));
}
}  // namespace half_detail

struct half {
  unsigned short bits;

  half() = default;
  template <class U, class = decltype(static_cast<float>(U()))>
  __device__ __forceinline__ constexpr half(U v) : bits(from_float(static_cast<float>(v))) {}

  template <class T, typename half_detail::enable<half_detail::is_fp<T>>::type = 0>
  __device__ __forceinline__ constexpr operator T() const {
    return T(to_float(bits));
  }
  template <class T, typename half_detail::enable<is_integral_impl<T>>::type = 0>
  __device__ __forceinline__ constexpr operator T() const {
    return T(to_float(bits));
  }

  __device__ __forceinline__ static constexpr half from_bits(unsigned short b) {
    half h{};
    h.bits = b;
    return h;
  }
  __device__ __forceinline__ static constexpr unsigned short from_float(float f) {
    if (__builtin_is_constant_evaluated()) return half_detail::float_to_half_bits(f);
    unsigned short b;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(b) : "f"(f));
    return b;
  }
  __device__ __forceinline__ static constexpr float to_float(unsigned short b) {
    if (__builtin_is_constant_evaluated()) return half_detail::half_bits_to_float(b);
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(b));
    return f;
  }
};

}  // namespace metal
