// custom_kernel_grid_sample_float_float_float_float: MLX metal_kernel 'grid_sample' translated by alloy::msl for CUDA (NVRTC). Generated; do not edit.
#define ALLOY_MATH_MODE_SAFE 1
#define ALLOY_MSL_SELECT 1
#define ALLOY_MSL_USE_MATH 1
#include "metal_cuda.h"
using namespace metal;
#define __METAL_VERSION__ 310
#define __METAL__ 1
#define __HAVE_BFLOAT__ 1
template <typename T>
ALLOY_KERNEL_FN void custom_kernel_grid_sample_float_float_float_float(
    const float* x,
    const int* x_shape,
    const float* grid,
    const int* grid_shape,
    float* out,
    uint3 thread_position_in_grid) {
#line 1 "source"

        uint elem = thread_position_in_grid.x;
        int H = x_shape[1];
        int W = x_shape[2];
        int C = x_shape[3];
        int gH = grid_shape[1];
        int gW = grid_shape[2];

        int w_stride = C;
        int h_stride = W * w_stride;
        int b_stride = H * h_stride;

        uint grid_idx = elem / C * 2;
        float ix = ((grid[grid_idx] + 1) * W - 1) / 2;
        float iy = ((grid[grid_idx + 1] + 1) * H - 1) / 2;

        int ix_nw = floor(ix);
        int iy_nw = floor(iy);

        int ix_ne = ix_nw + 1;
        int iy_ne = iy_nw;

        int ix_sw = ix_nw;
        int iy_sw = iy_nw + 1;

        int ix_se = ix_nw + 1;
        int iy_se = iy_nw + 1;

        T nw = (ix_se - ix)    * (iy_se - iy);
        T ne = (ix    - ix_sw) * (iy_sw - iy);
        T sw = (ix_ne - ix)    * (iy    - iy_ne);
        T se = (ix    - ix_nw) * (iy    - iy_nw);

        int batch_idx = elem / C / gH / gW * b_stride;
        int channel_idx = elem % C;
        int base_idx = batch_idx + channel_idx;

        T I_nw = x[base_idx + iy_nw * h_stride + ix_nw * w_stride];
        T I_ne = x[base_idx + iy_ne * h_stride + ix_ne * w_stride];
        T I_sw = x[base_idx + iy_sw * h_stride + ix_sw * w_stride];
        T I_se = x[base_idx + iy_se * h_stride + ix_se * w_stride];

        I_nw = iy_nw >= 0 && iy_nw <= H - 1 && ix_nw >= 0 && ix_nw <= W - 1 ? ::alloy_msl::cond_arm<decltype(0)>(I_nw) : ::alloy_msl::cond_lit<decltype((I_nw))>(0);
        I_ne = iy_ne >= 0 && iy_ne <= H - 1 && ix_ne >= 0 && ix_ne <= W - 1 ? ::alloy_msl::cond_arm<decltype(0)>(I_ne) : ::alloy_msl::cond_lit<decltype((I_ne))>(0);
        I_sw = iy_sw >= 0 && iy_sw <= H - 1 && ix_sw >= 0 && ix_sw <= W - 1 ? ::alloy_msl::cond_arm<decltype(0)>(I_sw) : ::alloy_msl::cond_lit<decltype((I_sw))>(0);
        I_se = iy_se >= 0 && iy_se <= H - 1 && ix_se >= 0 && ix_se <= W - 1 ? ::alloy_msl::cond_arm<decltype(0)>(I_se) : ::alloy_msl::cond_lit<decltype((I_se))>(0);

        out[elem] = nw * I_nw + ne * I_ne + sw * I_sw + se * I_se;
    
#line 69 "generated"
}

extern "C" __global__ void alloy_kernel_main(
    const float* __restrict__ in0,
    const __grid_constant__ alloy_msl::cuda::ShapeArg in0_shape,
    const float* __restrict__ in1,
    const __grid_constant__ alloy_msl::cuda::ShapeArg in1_shape,
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
      custom_kernel_grid_sample_float_float_float_float<float>(
      in0,
      in0_shape.v,
      in1,
      in1_shape.v,
      out0,
      t.thread_position_in_grid);
    }
    return;
  }
  for (unsigned j = 0; j < 4u; ++j) {
    alloy_msl::ThreadIds t;
    if (!alloy_msl::cuda::thread_ids(d, t, first + j)) return;  // past the grid
    custom_kernel_grid_sample_float_float_float_float<float>(
      in0,
      in0_shape.v,
      in1,
      in1_shape.v,
      out0,
      t.thread_position_in_grid);
  }
}
