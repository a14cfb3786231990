// One launch of a user's kernel (metal_kernel / cuda_kernel).
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>

#include "alloy/primitive.h"
#include "fast/prepared_launch.h"

namespace alloy {

class CustomKernel : public Primitive {
 public:
  CustomKernel(Stream s, fast::PreparedLaunch launch) : Primitive(s), launch_(std::move(launch)) {}

  const char* name() const override { return "CustomKernel"; }
  bool stoppable() const override;
  // A launch nobody waits for inside its eval (no bounds check, no timeout=)
  // may be recorded into a CUDA graph with its neighbours.
  bool graph_capturable() const override;
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums, const std::vector<array>& outputs) override;
  std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                         const std::vector<int>& argnums) override;

  // "[metal_kernel] kernel 'name'" (or cuda_kernel): how errors name it.
  std::string label() const { return fast::kernel_label(*launch_.variant); }
  fast::KernelVariant& variant() const { return *launch_.variant; }
  const fast::PreparedLaunch& launch() const { return launch_; }
  const std::array<unsigned, 3>& grid() const { return launch_.grid; }
  // Already clamped to the grid, per dimension.
  const std::array<unsigned, 3>& threadgroup() const { return launch_.threadgroup; }
  const std::optional<double>& init_value() const { return launch_.init_value; }
  bool ensure_row_contiguous() const { return launch_.ensure_row_contiguous; }
  // Whether input i goes to the kernel as a row-contiguous copy of its own:
  // when it must be made row-contiguous (ensure_row_contiguous, unless a
  // tensor parameter reads it through its strides), or when it starts less
  // aligned than the kernel's casts assume (msl::Analysis::
  // assumed_buffer_alignment: a view at an offset read as float4, sound on
  // Metal, whose buffers start on pages; on the CPU an aligned vector move
  // faults, on the GPU a misaligned access ends the context).
  bool input_needs_copy(const array& in, size_t i) const;
  // Dynamic shared memory per block, in bytes (cuda_kernel's shared_memory).
  unsigned shared_memory() const { return launch_.shared_memory; }

 private:
  fast::PreparedLaunch launch_;
};

}  // namespace alloy
