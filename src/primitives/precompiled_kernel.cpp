#include "primitives/precompiled_kernel.h"

#include <stdexcept>

namespace alloy {

void PrecompiledCudaKernel::eval_cpu(const std::vector<array>&, std::vector<array>&) {
  throw std::runtime_error(label() + ": a compiled CUDA kernel runs on the GPU only.");
}

std::vector<array> PrecompiledCudaKernel::vjp(const std::vector<array>&, const std::vector<array>&,
                                              const std::vector<int>&, const std::vector<array>&) {
  throw std::invalid_argument(label() + " has no derivative: wrap the call in mx.custom_function and give it a .vjp rule.");
}

std::vector<array> PrecompiledCudaKernel::jvp(const std::vector<array>&, const std::vector<array>&,
                                              const std::vector<int>&) {
  throw std::invalid_argument(label() + " has no derivative: wrap the call in mx.custom_function and give it a .jvp rule.");
}

}  // namespace alloy
