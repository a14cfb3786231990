// custom_kernel_myexp_float_float_float: MLX metal_kernel 'myexp' translated by alloy::msl for CUDA (NVRTC). Generated; do not edit.
#define ALLOY_MATH_MODE_SAFE 1
#include "metal_cuda.h"
#include "mlx_utils.h"
using namespace metal;
template <typename T>
ALLOY_KERNEL_FN void custom_kernel_myexp_float_float_float(
    const float* inp,
    float* out,
    uint3 thread_position_in_grid) {
#line 1 "source"

        uint elem = thread_position_in_grid.x;
        T tmp = inp[elem];
        out[elem] = metal::exp(tmp);
    
#line 18 "generated"
}

extern "C" __global__ void alloy_kernel_main(
    const float* __restrict__ in0,
    float* __restrict__ out0,
    alloy_msl::cuda::Dispatch d) {
  alloy_msl::ThreadIds t;
  if (!alloy_msl::cuda::thread_ids(d, t)) return;  // outside the grid
  custom_kernel_myexp_float_float_float<float>(
      in0,
      out0,
      t.thread_position_in_grid);
}
