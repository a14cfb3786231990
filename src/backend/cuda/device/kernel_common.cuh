// Device helpers every op kernel uses: dtype conversion with the host's
// rules (core/cast.h), aligned vector access, grid-stride indexing, warp
// shuffles for any element type.
#pragma once

#include "backend/common/math_shim.h"
#include "layout.cuh"

namespace alloy {

template <typename T>
inline constexpr bool is_16bit_float_v = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

// Float -> integer as the host's static_cast does on x86-64 for in-range
// values and for negative values into unsigned types (through a wider
// signed integer, then truncation).
template <typename To, typename F>
__device__ __forceinline__ To float_to_int(F v) {
  if constexpr (sizeof(To) < 4) return To(int(v));
  else if constexpr (std::is_same_v<To, uint32_t>) return To((long long)v);
  else if constexpr (std::is_same_v<To, uint64_t>) return v < F(0) ? To((long long)v) : To((unsigned long long)v);
  else return To(v);
}

// The value `v` converted to To, as alloy::cast_value on the host.
template <typename To, typename From>
__device__ __forceinline__ To cast_value(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (math::is_complex_v<From>) {
    if constexpr (math::is_complex_v<To>) return To(v);
    else if constexpr (std::is_same_v<To, bool>) return v.re != 0.0f || v.im != 0.0f;
    else return cast_value<To>(v.re);
  } else if constexpr (is_16bit_float_v<From>) {
    return cast_value<To>(float(v));
  } else if constexpr (math::is_complex_v<To>) {
    return To(float(v), 0.0f);
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_same_v<To, __half>) {
    if constexpr (std::is_same_v<From, double>) return __double2half(v);
    else return __float2half_rn(float(v));
  } else if constexpr (std::is_same_v<To, __nv_bfloat16>) {
    return __float2bfloat16_rn(float(v));
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    return float_to_int<To>(v);
  } else {
    return To(v);
  }
}

// `V` consecutive elements moved as one aligned access (16 bytes at most).
template <typename T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};

// 16 bytes moved as one (gather of contiguous, aligned blocks).
using bits128 = Vec<uint32_t, 4>;

// Global thread index and grid size for grid-stride loops (64-bit: a grid
// may cover more than 2^31 elements).
__device__ __forceinline__ int64_t global_thread() { return int64_t(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t grid_threads() { return int64_t(gridDim.x) * blockDim.x; }

// A value's bits as an unsigned word of its size (<= 4 bytes: in 32 bits),
// and back; NVRTC has no memcpy builtin, __builtin_bit_cast needs equal sizes.
template <typename T>
__device__ __forceinline__ auto to_bits(T v) {
  if constexpr (sizeof(T) == 1) return unsigned(__builtin_bit_cast(unsigned char, v));
  else if constexpr (sizeof(T) == 2) return unsigned(__builtin_bit_cast(unsigned short, v));
  else if constexpr (sizeof(T) == 4) return __builtin_bit_cast(unsigned, v);
  else return __builtin_bit_cast(unsigned long long, v);
}
template <typename T, typename B>
__device__ __forceinline__ T from_bits(B bits) {
  if constexpr (sizeof(T) == 1) return __builtin_bit_cast(T, (unsigned char)bits);
  else if constexpr (sizeof(T) == 2) return __builtin_bit_cast(T, (unsigned short)bits);
  else if constexpr (sizeof(T) == 4) return __builtin_bit_cast(T, (unsigned)bits);
  else return __builtin_bit_cast(T, (unsigned long long)bits);
}

// Shuffles for any element of up to 8 bytes (bool, 8/16-bit integers, half
// types) and complex64.
template <typename T>
__device__ __forceinline__ T shfl_down(T v, int delta, unsigned mask = 0xffffffffu) {
  if constexpr (math::is_complex_v<T>) {
    return T(__shfl_down_sync(mask, v.re, delta), __shfl_down_sync(mask, v.im, delta));
  } else {
    return from_bits<T>(__shfl_down_sync(mask, to_bits(v), delta));
  }
}
template <typename T>
__device__ __forceinline__ T shfl_up(T v, int delta) {
  if constexpr (math::is_complex_v<T>) {
    return T(__shfl_up_sync(0xffffffffu, v.re, delta), __shfl_up_sync(0xffffffffu, v.im, delta));
  } else {
    return from_bits<T>(__shfl_up_sync(0xffffffffu, to_bits(v), delta));
  }
}

}  // namespace alloy
