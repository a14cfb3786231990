// custom_kernel_tg_reduce_float_256_float_float: MLX metal_kernel 'tg_reduce' translated by alloy::msl for CUDA (NVRTC). Generated; do not edit.
#define ALLOY_MATH_MODE_SAFE 1
#define ALLOY_MSL_SELECT 1
#include "metal_cuda.h"
using namespace metal;
#define __METAL_VERSION__ 310
#define __METAL__ 1
#define __HAVE_BFLOAT__ 1
template <typename T, int N>
ALLOY_KERNEL_FN void custom_kernel_tg_reduce_float_256_float_float(
    const float* inp,
    float* out,
    uint3 thread_position_in_grid,
    uint3 thread_position_in_threadgroup,
    uint3 threadgroup_position_in_grid,
    uint3 threads_per_threadgroup) {
#line 1 "source"

    #define TILE 32
    ALLOY_THREADGROUP T partial[N];
    ALLOY_THREADGROUP float tile[TILE][TILE + 1];
    uint lid = thread_position_in_threadgroup.x;
    uint gid = thread_position_in_grid.x;
    partial[lid] = inp[gid];
    tile[lid % TILE][lid / TILE] = 0.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    T* p = partial;
    for (uint s = threads_per_threadgroup.x / 2; s > 0; s /= 2) {
        if (lid < s) p[lid] += p[lid + s];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (lid == 0) {
        out[threadgroup_position_in_grid.x] = ((T*)partial)[0];
    }
#line 36 "generated"
}

extern "C" __global__ void alloy_kernel_main(
    const float* __restrict__ in0,
    float* __restrict__ out0,
    alloy_msl::cuda::Dispatch d) {
  alloy_msl::ThreadIds t;
  if (!alloy_msl::cuda::thread_ids(d, t)) return;  // outside the grid
  custom_kernel_tg_reduce_float_256_float_float<float, 256>(
      in0,
      out0,
      t.thread_position_in_grid,
      t.thread_position_in_threadgroup,
      t.threadgroup_position_in_grid,
      t.threads_per_threadgroup);
}
