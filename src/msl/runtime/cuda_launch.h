// The launch description a translated CUDA kernel receives, shared by the
// host (liballoy, any C++ compiler) and the device (NVRTC): no dependencies.
//
// Launch a kernel for Metal's dispatchThreads(grid, threadgroup) as
//   gridDim  = threadgroups_per_grid(d)       (3-D, y and z at most 65535)
//   blockDim = threads_per_block(d) x 1 x 1   (prod(threadgroup), at most 1024)
// with `threadgroup` already clamped to `grid` per dimension (MLX's rule).
#pragma once

namespace alloy_msl {
namespace cuda {

struct Dispatch {
  unsigned grid[3];         // threads per grid, as requested (Metal's threads_per_grid)
  unsigned threadgroup[3];  // threads per threadgroup, as requested and clamped to grid
};

// An input's shape and strides, passed by value in the kernel's parameter
// space (read through `__grid_constant__`, so the body's loads of x_shape[i]
// are constant-bank reads, not dependent global loads).
inline constexpr int kMaxKernelDims = 16;
struct ShapeArg {
  int v[kMaxKernelDims];
};
struct StridesArg {
  long v[kMaxKernelDims];  // int64_t on LP64 Linux, host and NVRTC alike
};

inline constexpr unsigned threads_per_block(const Dispatch& d) {
  return d.threadgroup[0] * d.threadgroup[1] * d.threadgroup[2];
}
inline constexpr unsigned threadgroups_per_grid(const Dispatch& d, int dim) {
  return d.grid[dim] / d.threadgroup[dim] + (d.grid[dim] % d.threadgroup[dim] != 0u ? 1u : 0u);
}

}  // namespace cuda
}  // namespace alloy_msl
