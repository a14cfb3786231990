// alloy::mlx::metal_kernel: MLX's metal_kernel contract on MLX arrays. The
// checks, the translation and the variant caches are Alloy's own
// (alloy::fast::CustomKernelFunction::prepare); this file only converts MLX's
// call into Alloy's and puts one MetalKernelPrimitive node into MLX's graph.
#include "alloy/mlx/metal_kernel.h"

#include <cstdlib>
#include <memory>
#include <stdexcept>

#include "alloy/fast.h"
#include "core/env_switch.h"
#include "dtypes.h"
#include "fast/prepared_launch.h"
#include "mlx/ops.h"
#include "mlx/version.h"

#if MLX_VERSION_MAJOR != 0 || MLX_VERSION_MINOR != 32
#error "alloy::mlx supports MLX 0.32.x"
#endif
#include "launch.h"
#include "primitive.h"

namespace alloy::mlx {

namespace {

std::string math_mode_name(mxc::MathMode m) {
  switch (m) {
    case mxc::MathMode::Safe:
      return "safe";
    case mxc::MathMode::Relaxed:
      return "relaxed";
    case mxc::MathMode::Fast:
      return "fast";
  }
  throw std::invalid_argument("[metal_kernel] unknown math_mode.");
}

// On MLX's CUDA backend a read of an input out of bounds reads its last
// element, as a Metal GPU reads whatever lies there (KernelCall::
// tolerate_input_reads): MLX puts a large array at the start of a mapping of
// its own, so the seed's grid_sample, which loads corners outside the image
// before zeroing them, faulted the GPU (its context lost) reading before `x`.
// ALLOY_MLX_TOLERATE_READS=0 launches the kernels as written.
bool tolerate_input_reads_on_gpu() {
  static const bool on = alloy::switched_on("ALLOY_MLX_TOLERATE_READS");
  return on;
}

}  // namespace

fast::CustomKernelFunction make_kernel(const std::string& name, const std::vector<std::string>& input_names,
                                       const std::vector<std::string>& output_names, const std::string& source,
                                       const std::string& header, bool ensure_row_contiguous, bool atomic_outputs,
                                       const mxc::CompileOptions& compile_options) {
  return fast::metal_kernel(name, input_names, output_names, source, header, ensure_row_contiguous, atomic_outputs,
                            math_mode_name(compile_options.math_mode));
}

std::vector<mxc::array> launch(const fast::CustomKernelFunction& fn, const std::vector<mxc::array>& inputs,
                               const std::vector<mxc::Shape>& output_shapes,
                               const std::vector<mxc::Dtype>& output_dtypes, std::tuple<int, int, int> grid,
                               std::tuple<int, int, int> threadgroup,
                               const std::vector<std::pair<std::string, mxc::fast::TemplateArg>>& template_args,
                               std::optional<float> init_value, bool verbose,
                               std::optional<bool> ensure_row_contiguous, mxc::StreamOrDevice s) {
  mxc::Stream stream = mxc::to_stream(s);
  std::vector<fast::OperandDesc> operands;
  operands.reserve(inputs.size());
  for (const auto& in : inputs) operands.push_back({to_alloy(in.dtype()), static_cast<int>(in.ndim()), in.size()});
  fast::KernelCall call;
  for (const auto& shape : output_shapes) call.output_shapes.emplace_back(shape.begin(), shape.end());
  for (const auto& d : output_dtypes) call.output_dtypes.push_back(to_alloy(d));
  call.grid = grid;
  call.threadgroup = threadgroup;
  for (auto& [n, v] : template_args) {
    fast::TemplateArg a;
    if (auto* i = std::get_if<int>(&v)) a = *i;
    else if (auto* b = std::get_if<bool>(&v)) a = *b;
    else a = to_alloy(std::get<mxc::Dtype>(v));
    call.template_args.emplace_back(n, a);
  }
  if (init_value) call.init_value = *init_value;
  call.verbose = verbose;
  call.ensure_row_contiguous = ensure_row_contiguous;
  const bool gpu = stream.device == mxc::Device::gpu;
  call.tolerate_input_reads = gpu && tolerate_input_reads_on_gpu();
  fast::PreparedLaunch p = fn.prepare(operands, call, gpu);

  // MLX copies inputs inside its kernel's eval; here the copies are nodes
  // of their own, only for inputs not known to be row-contiguous already
  // (an evaluated array's layout is known now; a lazy one's is not).
  std::vector<mxc::array> node_inputs = inputs;
  if (p.ensure_row_contiguous) {
    for (auto& in : node_inputs) {
      if (in.status() != mxc::array::Status::unscheduled && in.flags().row_contiguous) continue;
      in = mxc::contiguous(in, /*allow_col_major=*/false, stream);
    }
  }
  auto prim = std::make_shared<MetalKernelPrimitive>(stream, std::move(p));
  return mxc::array::make_arrays(output_shapes, output_dtypes, prim, node_inputs);
}

mxc::fast::CustomKernelFunction metal_kernel(const std::string& name, const std::vector<std::string>& input_names,
                                             const std::vector<std::string>& output_names, const std::string& source,
                                             const std::string& header, bool ensure_row_contiguous,
                                             bool atomic_outputs, const mxc::CompileOptions& compile_options) {
  fast::CustomKernelFunction fn = make_kernel(name, input_names, output_names, source, header, ensure_row_contiguous,
                                              atomic_outputs, compile_options);
  return [fn](const std::vector<mxc::array>& inputs, const std::vector<mxc::Shape>& output_shapes,
              const std::vector<mxc::Dtype>& output_dtypes, std::tuple<int, int, int> grid,
              std::tuple<int, int, int> threadgroup,
              std::vector<std::pair<std::string, mxc::fast::TemplateArg>> template_args,
              std::optional<float> init_value, bool verbose, mxc::StreamOrDevice s) {
    return launch(fn, inputs, output_shapes, output_dtypes, grid, threadgroup, template_args, init_value, verbose,
                  std::nullopt, s);
  };
}

#define ALLOY_MLX_STR2(x) #x
#define ALLOY_MLX_STR(x) ALLOY_MLX_STR2(x)
const char* built_for_mlx_version() {
  return ALLOY_MLX_STR(MLX_VERSION_MAJOR) "." ALLOY_MLX_STR(MLX_VERSION_MINOR) "." ALLOY_MLX_STR(MLX_VERSION_PATCH);
}

std::vector<mxc::array> MetalKernelPrimitive::vjp(const std::vector<mxc::array>&, const std::vector<mxc::array>&,
                                                  const std::vector<int>&, const std::vector<mxc::array>&) {
  throw std::invalid_argument(fast::kernel_label(*launch_.variant) +
                              " has no derivative: wrap the call in mx.custom_function and give it a .vjp rule.");
}

std::vector<mxc::array> MetalKernelPrimitive::jvp(const std::vector<mxc::array>&, const std::vector<mxc::array>&,
                                                  const std::vector<int>&) {
  throw std::invalid_argument(fast::kernel_label(*launch_.variant) +
                              " has no forward derivative: wrap the call in mx.custom_function and give it a "
                              ".jvp rule.");
}

bool MetalKernelPrimitive::is_equivalent(const mxc::Primitive& other) const {
  auto* o = dynamic_cast<const MetalKernelPrimitive*>(&other);
  if (!o) return false;
  const fast::PreparedLaunch& a = launch_;
  const fast::PreparedLaunch& b = o->launch_;
  return a.variant == b.variant && a.grid == b.grid && a.threadgroup == b.threadgroup &&
         a.init_value == b.init_value && a.shared_memory == b.shared_memory;
}

}  // namespace alloy::mlx
