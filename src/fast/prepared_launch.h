// One launch of a custom kernel, checked and with its variant found: what a
// backend needs besides the buffers. Alloy's own CustomKernel node and the
// MLX plugin's primitive (plugin/mlx) are both built from one.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fast/kernel_cache.h"

namespace alloy::fast {

struct PreparedLaunch {
  std::shared_ptr<KernelVariant> variant;
  std::array<unsigned, 3> grid;         // threads, as dispatchThreads counts them
  std::array<unsigned, 3> threadgroup;  // a Metal body's is clamped to the grid
  std::optional<double> init_value;
  bool ensure_row_contiguous = true;
  unsigned shared_memory = 0;  // cuda_kernel: dynamic shared memory per block
  double timeout = 0;          // seconds before the launch is stopped; 0: no limit
  // metal_library in-out buffers: per output, the input whose contents it
  // starts from (-1: uninitialised). Empty: every output starts fresh.
  std::vector<int> output_from_input;
  // metal_library tensor parameters: per kernel input, whether it is passed
  // with its own strides (never copied to row-contiguous). Empty: none is.
  std::vector<bool> strided_inputs;
};

// How many of a node's inputs are in-out sources (output_from_input): they
// come after the kernel's own inputs and are copied, not passed.
inline size_t in_out_sources(const PreparedLaunch& p) {
  size_t n = 0;
  for (int f : p.output_from_input) n += f >= 0;
  return n;
}

// "[metal_kernel] kernel 'name'" (or cuda_kernel, metal_library): how errors name a kernel.
std::string kernel_label(const KernelVariant& v);

}  // namespace alloy::fast
