// What the runtime reports about devices, and graph-level ops with no math:
// mx.device_info / mx.device_count / mx.depends.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <map>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "alloy/array.h"
#include "alloy/device.h"

namespace alloy {

using DeviceInfo = std::map<std::string, std::variant<std::string, size_t>>;

// MLX's keys for the device: "architecture" and "device_name" on every
// device; on the GPU also "memory_size" and Metal's sizing keys
// ("max_buffer_length", "max_recommended_working_set_size"), which real code
// reads to size its caches.
DeviceInfo device_info(const Device& d);
// Devices of a type this process can use (0 GPUs without a driver).
int device_count(Device::DeviceType type);

// `inputs`, unchanged, made to depend on `dependencies`: evaluating an output
// first evaluates every dependency. Gradients flow to `inputs` only.
std::vector<array> depends(const std::vector<array>& inputs, const std::vector<array>& dependencies);

// How float32 matmuls run on the GPU, under PyTorch's names: "highest"
// (the default: full float32 products and sums) or "high" (TF32 tensor
// cores: inputs rounded to 10 mantissa bits, float32 sums; "medium" means
// the same here). The CPU always computes in float32. The environment
// variable ALLOY_FLOAT32_MATMUL_PRECISION sets the starting value.
// Unknown names throw std::invalid_argument.
void set_float32_matmul_precision(const std::string& precision);
std::string get_float32_matmul_precision();
// True when float32 GPU matmuls may use TF32.
bool float32_matmul_uses_tf32();

// Writes the unevaluated graph behind `outputs` in Graphviz's DOT language.
// Each output may carry a name (empty: letters in the order met).
void export_to_dot(std::ostream& os, const std::vector<std::pair<std::string, array>>& outputs);

}  // namespace alloy
