// The launch description a translated CUDA kernel receives, shared by the
// host (liballoy, any C++ compiler) and the device (NVRTC): no dependencies.
//
// Launch a kernel for Metal's dispatchThreads(grid, threadgroup) as
//   gridDim  = threadgroups_per_grid(d)       (3-D)
//   blockDim = threads_per_block(d) x 1 x 1   (prod(threadgroup), at most 1024)
// with `threadgroup` already clamped to `grid` per dimension (MLX's rule).
// CUDA allows at most 65535 blocks in y and z; beyond that the launcher
// folds the (y, z) threadgroups into one linear range spread over gridDim.y
// x gridDim.z, and sets `fold_y` so the kernel can unfold it.
#pragma once

namespace alloy_msl {
namespace cuda {

struct Dispatch {
  unsigned grid[3];         // threads per grid, as requested (Metal's threads_per_grid)
  unsigned threadgroup[3];  // threads per threadgroup, as requested and clamped to grid
  unsigned fold_y;          // 0, or the threadgroups along y when (y, z) are folded
  // 1 + log2(threadgroup[0]) for 2-D threadgroups whose width is a power of
  // two, else 0: whole-width groups then split their linear index by shift.
  unsigned x_shift;
  // 1 when every threadgroup is whole and every block runs threadgroups of
  // the grid (no partial group, no folding, no padding block): the ids then
  // need no checks, which is most of a small kernel's instructions.
  unsigned whole;
};

inline constexpr unsigned kMaxBlocksYZ = 65535;

// An input's shape and strides, passed by value in the kernel's parameter
// space (read through `__grid_constant__`, so the body's loads of x_shape[i]
// are constant-bank reads, not dependent global loads).
// CUDA bodies index them directly (x_shape[i]), as MLX's Shape/Strides.
#if defined(__CUDACC_RTC__)
#define ALLOY_LAUNCH_FN __device__ __forceinline__
#else
#define ALLOY_LAUNCH_FN inline
#endif
inline constexpr int kMaxKernelDims = 16;
struct ShapeArg {
  int v[kMaxKernelDims];
  ALLOY_LAUNCH_FN int operator[](int i) const { return v[i]; }
};
struct StridesArg {
  long v[kMaxKernelDims];  // int64_t on LP64 Linux, host and NVRTC alike
  ALLOY_LAUNCH_FN long operator[](int i) const { return v[i]; }
};

inline constexpr unsigned threads_per_block(const Dispatch& d) {
  return d.threadgroup[0] * d.threadgroup[1] * d.threadgroup[2];
}
inline constexpr unsigned threadgroups_per_grid(const Dispatch& d, int dim) {
  return d.grid[dim] / d.threadgroup[dim] + (d.grid[dim] % d.threadgroup[dim] != 0u ? 1u : 0u);
}

}  // namespace cuda
}  // namespace alloy_msl
