// Custom kernels: MLX's mx.fast.metal_kernel (Metal bodies, run here on
// NVIDIA GPUs and CPUs) and mx.fast.cuda_kernel (CUDA bodies).
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "alloy/array.h"
#include "alloy/device.h"
#include "alloy/errors.h"

namespace alloy::fast {

using TemplateArg = std::variant<Dtype, int, bool>;
using Dims3 = std::tuple<int, int, int>;

struct KernelCall {
  std::vector<array> inputs;
  std::vector<Shape> output_shapes;
  std::vector<Dtype> output_dtypes;
  Dims3 grid{1, 1, 1};
  Dims3 threadgroup{1, 1, 1};
  std::vector<std::pair<std::string, TemplateArg>> template_args;
  std::optional<double> init_value;
  bool verbose = false;
  // Overrides the kernel's own setting for this call when set.
  std::optional<bool> ensure_row_contiguous;
  StreamOrDevice stream;
  // Seconds the launch may run before it is stopped (KernelTimeout); unset:
  // $ALLOY_KERNEL_TIMEOUT when set, else no limit. CPU launches only so far.
  // (alloy::KernelTimeout, alloy/errors.h)
  std::optional<double> timeout;
};


struct PreparedLaunch;  // src/fast/prepared_launch.h

// What validation and the variant caches need to know of one input, so a
// launch can be prepared for arrays that are not Alloy's (the MLX plugin).
struct OperandDesc {
  Dtype dtype;
  int ndim;
  size_t size;
};

// The callable metal_kernel returns: builds lazy outputs for one launch.
class CustomKernelFunction {
 public:
  std::vector<array> operator()(const KernelCall& call) const;
  // Everything of a launch but its arrays: checks `call` (whose `inputs` and
  // `stream` are not read; `operands` describes the inputs), then finds or
  // translates the variant for the GPU (CUDA) or the CPU (C++). Prints the
  // translation when call.verbose. Errors name the kernel.
  PreparedLaunch prepare(const std::vector<OperandDesc>& operands, const KernelCall& call, bool gpu) const;
  struct State;
  explicit CustomKernelFunction(std::shared_ptr<State> s) : state_(std::move(s)) {}

 private:
  std::shared_ptr<State> state_;
};

CustomKernelFunction metal_kernel(const std::string& name, const std::vector<std::string>& input_names,
                                  const std::vector<std::string>& output_names, const std::string& source,
                                  const std::string& header = "", bool ensure_row_contiguous = true,
                                  bool atomic_outputs = false, const std::string& math_mode = "safe");

// MLX's cuda_kernel: the same call with a CUDA body, run on the GPU only.
// The body sees MLX's signature (`const T* name` per input, `name_shape`,
// `name_strides`, `name_ndim` when it uses them, `T* name` per output) and
// the template values as `using T = ...;` / `constexpr int N = ...;`. The
// grid counts threads, as for metal_kernel: blocks = ceil(grid/threadgroup).
// `shared_memory` bytes of dynamic shared memory per block (extern __shared__).
CustomKernelFunction cuda_kernel(const std::string& name, const std::vector<std::string>& input_names,
                                 const std::vector<std::string>& output_names, const std::string& source,
                                 const std::string& header = "", bool ensure_row_contiguous = true,
                                 int shared_memory = 0);

}  // namespace alloy::fast
