#include "primitives/custom_kernel.h"

#include <stdexcept>

#include "fast/kernel_cache.h"

namespace alloy {

// Metal bodies poll the stop flag in their loops; cuda_kernel bodies do not.
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
