#include "core/streams.h"

#include <stdexcept>

namespace alloy {

// Without the CUDA backend every buffer lives on the host.
const std::vector<array>& inputs_on_host(const std::vector<array>& inputs) {
  for (auto& in : inputs) {
    if (in.device().type != Device::cpu) {
      throw std::runtime_error("[eval] a GPU-resident input reached the CPU backend; transfers need the CUDA backend.");
    }
  }
  return inputs;
}

std::vector<array> inputs_on_device(const std::vector<array>& inputs, const Stream&) { return inputs; }

void synchronize_streams_for(const std::vector<array>&) {}

void copy_item_to_host(const array& a, void* dst) {
  throw std::runtime_error("[item] device-to-host copies need the CUDA backend.");
}

}  // namespace alloy
