// Whether a CUDA GPU can be used, decided once by loading the driver at run
// time. The CUDA backend provides the definitions.
#pragma once

#include <cstddef>
#include <string>

namespace alloy {
bool gpu_is_available();
std::string gpu_unavailable_reason();
// The GPU's architecture as compilers name it ("sm_90"); makes the context current.
const std::string& gpu_arch();
// The architecture user kernels are compiled for: gpu_arch() with its
// architecture-specific features where it has them (jit::with_arch_features).
const std::string& gpu_kernel_arch();
// The GPU's name and memory in bytes (device 0; the GPU must be available).
std::string gpu_name();
size_t gpu_total_memory();
}  // namespace alloy
