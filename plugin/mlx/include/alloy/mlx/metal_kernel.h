// Alloy inside real MLX: mlx::core::fast::metal_kernel's contract, run by
// Alloy's translator on MLX's own CPU and CUDA backends. The kernel's
// outputs are ordinary MLX arrays (lazy, on MLX's streams, usable under
// MLX's transforms); the CPU runs the C++ translation, the GPU the CUDA
// translation on MLX's CUDA stream.
//
//   auto k = alloy::mlx::metal_kernel("myexp", {"inp"}, {"out"}, source);
//   auto outs = k({x}, {x.shape()}, {x.dtype()}, {n, 1, 1}, {256, 1, 1}, {}, std::nullopt, false, {});
#pragma once

#include <string>
#include <vector>

#include "mlx/backend/common/metal_kernel.h"
#include "mlx/fast.h"

namespace alloy::mlx {

// Same arguments and callable as mlx::core::fast::metal_kernel.
::mlx::core::fast::CustomKernelFunction metal_kernel(const std::string& name,
                                                     const std::vector<std::string>& input_names,
                                                     const std::vector<std::string>& output_names,
                                                     const std::string& source, const std::string& header = "",
                                                     bool ensure_row_contiguous = true, bool atomic_outputs = false,
                                                     const ::mlx::core::CompileOptions& compile_options = {});

// The MLX version this library was built against ("0.32.4").
const char* built_for_mlx_version();

}  // namespace alloy::mlx
