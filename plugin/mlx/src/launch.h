// One launch of a Metal kernel on MLX arrays: what the C++ API's callable
// and the Python binding both run. `ensure_row_contiguous`, when set,
// overrides the kernel's own setting for this call (older MLX took it at
// call time, and the MLX guide's strided example still passes it there).
#pragma once

#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "alloy/fast.h"
#include "mlx/fast.h"

namespace alloy::mlx {

std::vector<::mlx::core::array> launch(
    const fast::CustomKernelFunction& fn, const std::vector<::mlx::core::array>& inputs,
    const std::vector<::mlx::core::Shape>& output_shapes, const std::vector<::mlx::core::Dtype>& output_dtypes,
    std::tuple<int, int, int> grid, std::tuple<int, int, int> threadgroup,
    const std::vector<std::pair<std::string, ::mlx::core::fast::TemplateArg>>& template_args,
    std::optional<float> init_value, bool verbose, std::optional<bool> ensure_row_contiguous,
    ::mlx::core::StreamOrDevice s);

// Alloy's kernel object for MLX's metal_kernel arguments.
fast::CustomKernelFunction make_kernel(const std::string& name, const std::vector<std::string>& input_names,
                                       const std::vector<std::string>& output_names, const std::string& source,
                                       const std::string& header, bool ensure_row_contiguous, bool atomic_outputs,
                                       const ::mlx::core::CompileOptions& compile_options);

}  // namespace alloy::mlx
