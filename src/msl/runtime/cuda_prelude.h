// CUDA target, first part: what must exist before the shared headers are
// parsed. NVRTC has no <stdint.h>, and it predeclares CUDA's own vector types
// (::uint3, ::float4, ... 12-byte float3, no operators) in the global
// namespace, where they would make Metal's names ambiguous under
// `using namespace metal;`. The macros below rename every Metal vector name
// that CUDA also uses, consistently in the runtime and in user code, so
// `uint3` always means metal's (diagnostics show `alloy_uint3`).
#pragma once

#if !defined(__CUDACC_RTC__)
#error "metal_cuda.h is compiled by NVRTC only"
#endif

#include "nvrtc_stdint.h"

// ---- Metal vector names that CUDA predeclares
#define char2 alloy_char2
#define char3 alloy_char3
#define char4 alloy_char4
#define uchar2 alloy_uchar2
#define uchar3 alloy_uchar3
#define uchar4 alloy_uchar4
#define short2 alloy_short2
#define short3 alloy_short3
#define short4 alloy_short4
#define ushort2 alloy_ushort2
#define ushort3 alloy_ushort3
#define ushort4 alloy_ushort4
#define int2 alloy_int2
#define int3 alloy_int3
#define int4 alloy_int4
#define uint2 alloy_uint2
#define uint3 alloy_uint3
#define uint4 alloy_uint4
#define long2 alloy_long2
#define long3 alloy_long3
#define long4 alloy_long4
#define ulong2 alloy_ulong2
#define ulong3 alloy_ulong3
#define ulong4 alloy_ulong4
#define float2 alloy_float2
#define float3 alloy_float3
#define float4 alloy_float4

// ---- qualifiers the translator emits
#define ALLOY_THREADGROUP __shared__
#define ALLOY_PROGRAM_CONSTANT static constexpr __device__
#define ALLOY_KERNEL_FN __device__ __forceinline__
#define METAL_FUNC __device__ __forceinline__
#define ALLOY_FUNC __device__ __forceinline__
// `#pragma clang loop unroll(...)` in Metal source (msl/rewrite.cpp).
#define ALLOY_PRAGMA_TEXT(x) _Pragma(#x)
#define ALLOY_LOOP_UNROLL _Pragma("unroll")
#define ALLOY_LOOP_UNROLL_BY(n) ALLOY_PRAGMA_TEXT(unroll n)
