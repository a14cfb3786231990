// custom_kernel_myexp_strided_float_float_float: MLX metal_kernel 'myexp_strided' translated by alloy::msl for CUDA (NVRTC). Generated; do not edit.
#define ALLOY_MATH_MODE_SAFE 1
#define ALLOY_MSL_SELECT 1
#define ALLOY_MSL_USE_MATH 1
#define ALLOY_MSL_USE_MLX_UTILS 1
#include "metal_cuda.h"
#include "mlx_utils.h"
using namespace metal;
#define __METAL_VERSION__ 310
#define __METAL__ 1
#define __HAVE_BFLOAT__ 1
template <typename T>
ALLOY_KERNEL_FN void custom_kernel_myexp_strided_float_float_float(
    const float* inp,
    const int* inp_shape,
    const int64_t* inp_strides,
    const int inp_ndim,
    float* out,
    uint3 thread_position_in_grid) {
#line 1 "source"

        uint elem = thread_position_in_grid.x;
        // Utils from `mlx/backend/metal/kernels/utils.h` are automatically included
        uint loc = elem_to_loc(elem, inp_shape, inp_strides, inp_ndim);
        T tmp = inp[loc];
        // Output arrays are always row contiguous
        out[elem] = metal::exp(tmp);
    
#line 30 "generated"
}

extern "C" __global__ void alloy_kernel_main(
    const float* __restrict__ in0,
    const __grid_constant__ alloy_msl::cuda::ShapeArg in0_shape,
    const __grid_constant__ alloy_msl::cuda::StridesArg in0_strides,
    int in0_ndim,
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
      custom_kernel_myexp_strided_float_float_float<float>(
      in0,
      in0_shape.v,
      in0_strides.v,
      in0_ndim,
      out0,
      t.thread_position_in_grid);
    }
    return;
  }
  for (unsigned j = 0; j < 4u; ++j) {
    alloy_msl::ThreadIds t;
    if (!alloy_msl::cuda::thread_ids(d, t, first + j)) return;  // past the grid
    custom_kernel_myexp_strided_float_float_float<float>(
      in0,
      in0_shape.v,
      in0_strides.v,
      in0_ndim,
      out0,
      t.thread_position_in_grid);
  }
}
