// custom_kernel_half_literals_float16_t_float16_t: MLX metal_kernel 'half_literals' translated by alloy::msl for CUDA (NVRTC). Generated; do not edit.
#define ALLOY_MATH_MODE_SAFE 1
#define ALLOY_MSL_SELECT 1
#define ALLOY_MSL_USE_HALF_OPS 1
#include "metal_cuda.h"
using namespace metal;
#define __METAL_VERSION__ 310
#define __METAL__ 1
#define __HAVE_BFLOAT__ 1
ALLOY_KERNEL_FN void custom_kernel_half_literals_float16_t_float16_t(
    const float16_t* inp,
    float16_t* out,
    uint3 thread_position_in_grid) {
#line 1 "source"

    uint i = thread_position_in_grid.x;
    half a = half(1.0);
    half b = half(0.5) * inp[i] + half(.25) - half(1e-2);
    half2 v = half2(half(2.0), -half(3.5));
    out[i] = a + b + v.x * v.y + 1.0f;
#line 22 "generated"
}

extern "C" __global__ void alloy_kernel_main(
    const float16_t* __restrict__ in0,
    float16_t* __restrict__ out0,
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
      custom_kernel_half_literals_float16_t_float16_t(
      in0,
      out0,
      t.thread_position_in_grid);
    }
    return;
  }
  for (unsigned j = 0; j < 4u; ++j) {
    alloy_msl::ThreadIds t;
    if (!alloy_msl::cuda::thread_ids(d, t, first + j)) return;  // past the grid
    custom_kernel_half_literals_float16_t_float16_t(
      in0,
      out0,
      t.thread_position_in_grid);
  }
}
