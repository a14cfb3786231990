// custom_kernel_swizzles_float_float: MLX metal_kernel 'swizzles' translated by alloy::msl for CUDA (NVRTC). Generated; do not edit.
#define ALLOY_MATH_MODE_SAFE 1
#define ALLOY_MSL_SELECT 1
#include "metal_cuda.h"
using namespace metal;
#define __METAL_VERSION__ 310
#define __METAL__ 1
#define __HAVE_BFLOAT__ 1
ALLOY_KERNEL_FN void custom_kernel_swizzles_float_float(
    const float* inp,
    float* out,
    uint3 thread_position_in_grid) {
#line 1 "source"

    uint i = thread_position_in_grid.x;
    float4 v = float4(inp[4 * i], inp[4 * i + 1], inp[4 * i + 2], inp[4 * i + 3]);
    float2 lo = v.template swizzle<0,1>();
    v.template swizzle_ref<2,3>() = lo.template swizzle<1,0>();
    v.template swizzle_ref<0,1>() += float2(1.0f, 2.0f);
    float4 c = v.template swizzle<2,1,0,3>();
    c.template swizzle_ref<0,1,2>() *= 0.5f;
    float3 t = c.template swizzle<0,1,2>();
    v.x = t.z + c.a;
    ::alloy_msl::vector_cast_ptr<float4> o = ::alloy_msl::vector_cast<float4>(out);
    o[i] = v.template swizzle<3,2,1,0>();
#line 27 "generated"
}

extern "C" __global__ void alloy_kernel_main(
    const float* __restrict__ in0,
    float* __restrict__ out0,
    alloy_msl::cuda::Dispatch d) {
  const unsigned first = blockIdx.x * 4u;
  if (d.threadgroup[1] == 1u && d.threadgroup[2] == 1u && d.fold_y == 0u &&
      (first + 4u) * d.threadgroup[0] <= d.grid[0]) {
    alloy_msl::ThreadIds ids[4];
#pragma unroll
    for (unsigned j = 0; j < 4u; ++j) alloy_msl::cuda::thread_ids(d, ids[j], first + j);
#pragma unroll
    for (unsigned j = 0; j < 4u; ++j) {
      const alloy_msl::ThreadIds& t = ids[j];
      custom_kernel_swizzles_float_float(
      in0,
      out0,
      t.thread_position_in_grid);
    }
    return;
  }
  for (unsigned j = 0; j < 4u; ++j) {
    alloy_msl::ThreadIds t;
    if (!alloy_msl::cuda::thread_ids(d, t, first + j)) return;  // past the grid
    custom_kernel_swizzles_float_float(
      in0,
      out0,
      t.thread_position_in_grid);
  }
}
