#include "primitives/custom_kernel.h"

#include <stdexcept>

namespace alloy {

std::string CustomKernel::label() const {
  const char* api = variant_->spec.dialect == msl::Dialect::Cuda ? "cuda_kernel" : "metal_kernel";
  return std::string("[") + api + "] kernel '" + user_name_ + "'";
}

std::vector<array> CustomKernel::vjp(const std::vector<array>&, const std::vector<array>&, const std::vector<int>&,
                                     const std::vector<array>&) {
  throw std::invalid_argument(label() + " has no derivative: wrap the call in mx.custom_function and give it a .vjp rule.");
}

std::vector<array> CustomKernel::jvp(const std::vector<array>&, const std::vector<array>&, const std::vector<int>&) {
  throw std::invalid_argument(label() + " has no forward derivative: wrap the call in mx.custom_function and give it a "
                              ".jvp rule.");
}

}  // namespace alloy
