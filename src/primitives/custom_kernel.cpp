#include "primitives/custom_kernel.h"

#include <cstdint>
#include <stdexcept>

#include "fast/cuda_plan.h"
#include "fast/kernel_cache.h"

namespace alloy {

// Metal bodies poll the stop flag in their loops; cuda_kernel bodies do not.
bool CustomKernel::input_needs_copy(const array& in, size_t i) const {
  const std::vector<bool>& strided = launch_.strided_inputs;
  if (ensure_row_contiguous() && !in.flags().row_contiguous && !(i < strided.size() && strided[i])) return true;
  // A CUDA variant from the disk cache has its plan, not its translation.
  const fast::KernelVariant& v = *launch_.variant;
  const unsigned alignment = v.cuda_plan ? v.cuda_plan->buffer_alignment : v.translated.analysis.assumed_buffer_alignment;
  return alignment > 8 && in.nbytes() > 0 && reinterpret_cast<uintptr_t>(in.raw_data()) % alignment != 0;
}

bool CustomKernel::stoppable() const { return launch_.variant->spec.dialect == msl::Dialect::Metal; }
bool CustomKernel::graph_capturable() const { return !launch_.variant->spec.bounds_check && !(launch_.timeout > 0); }

std::vector<array> CustomKernel::vjp(const std::vector<array>&, const std::vector<array>&, const std::vector<int>&,
                                     const std::vector<array>&) {
  throw std::invalid_argument(label() + " has no derivative: wrap the call in mx.custom_function and give it a .vjp rule.");
}

std::vector<array> CustomKernel::jvp(const std::vector<array>&, const std::vector<array>&, const std::vector<int>&) {
  throw std::invalid_argument(label() + " has no forward derivative: wrap the call in mx.custom_function and give it a "
                              ".jvp rule.");
}

}  // namespace alloy
