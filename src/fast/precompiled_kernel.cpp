// mx.fast.precompiled_cuda_kernel: a kernel the user compiled (PTX or cubin),
// launched with MLX's arguments (pointers, then scalars by value).
#include <stdexcept>
#include <string>

#include "alloy/fast.h"
#include "fast/kernel_support.h"
#include "primitives/precompiled_kernel.h"

namespace alloy::fast {

namespace {

// What the start of `bytes` says it is: a cubin (ELF), PTX text, or neither.
bool looks_compiled(const std::string& bytes) {
  if (bytes.size() >= 4 && bytes.compare(0, 4, "\x7f" "ELF") == 0) return true;
  return bytes.find(".version") != std::string::npos && bytes.find(".entry") != std::string::npos;
}

}  // namespace

std::vector<array> precompiled_cuda_kernel(const std::string& name, const std::string& compiled_source,
                                           const std::vector<array>& inputs, const std::vector<Shape>& output_shapes,
                                           const std::vector<Dtype>& output_dtypes,
                                           const std::vector<ScalarArg>& scalars, Dims3 grid, Dims3 threadgroup,
                                           int shared_memory, std::optional<float> init_value,
                                           bool ensure_row_contiguous, StreamOrDevice s) {
  auto label = [&] { return "[precompiled_cuda_kernel] kernel '" + name + "': "; };
  if (name.empty()) throw std::invalid_argument("[precompiled_cuda_kernel] name must name the kernel's function.");
  if (!looks_compiled(compiled_source)) {
    throw std::invalid_argument(label() + "compiled_source is neither a cubin (ELF) nor PTX text (" +
                                std::to_string(compiled_source.size()) + " bytes).");
  }
  if (output_shapes.size() != output_dtypes.size()) {
    throw std::invalid_argument(label() + "got " + std::to_string(output_shapes.size()) + " output shapes but " +
                                std::to_string(output_dtypes.size()) + " output dtypes.");
  }
  if (output_shapes.empty()) throw std::invalid_argument(label() + "needs at least one output.");
  for (size_t i = 0; i < output_shapes.size(); ++i) {
    for (auto d : output_shapes[i]) {
      if (d < 0) throw std::invalid_argument(label() + "output shape " + std::to_string(i) + " has a negative dimension.");
    }
  }
  if (shared_memory < 0) throw std::invalid_argument(label() + "shared_memory must not be negative.");
  const std::array<unsigned, 3> block = checked_threadgroup(label, grid, threadgroup, /*cuda_block=*/true);
  Stream stream = to_stream(s);
  if (stream.device.type != Device::gpu) {
    // RuntimeError, as MLX's CPU build raises (at eval) for this call.
    throw std::runtime_error(label() + "a compiled CUDA kernel runs on the GPU only, and this call's stream is "
                             "on the CPU. Pass stream=mx.gpu on a machine with an NVIDIA GPU.");
  }
  PrecompiledCudaKernel::Launch l;
  l.name = name;
  l.image = std::make_shared<const std::string>(compiled_source);
  l.scalars = scalars;
  const std::array<int, 3> g{std::get<0>(grid), std::get<1>(grid), std::get<2>(grid)};
  for (int i = 0; i < 3; ++i) {
    l.block[i] = block[i];
    l.blocks[i] = static_cast<unsigned>((static_cast<long>(g[i]) + block[i] - 1) / block[i]);
  }
  l.shared_memory = static_cast<unsigned>(shared_memory);
  l.init_value = init_value;
  l.ensure_row_contiguous = ensure_row_contiguous;
  auto prim = std::make_shared<PrecompiledCudaKernel>(stream, std::move(l));
  return array::make_arrays(output_shapes, output_dtypes, prim, inputs);
}

}  // namespace alloy::fast
