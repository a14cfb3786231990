#include "primitives/depends.h"

#include <stdexcept>

#include "alloy/ops.h"

namespace alloy {

void Depends::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  for (size_t i = 0; i < outputs.size(); ++i) outputs[i].copy_shared_buffer(inputs[i]);
}
void Depends::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) { eval_cpu(inputs, outputs); }

std::vector<array> Depends::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                                const std::vector<int>& argnums, const std::vector<array>&) {
  std::vector<array> out;
  for (int a : argnums) {
    out.push_back(a < static_cast<int>(num_inputs_) ? cotangents[a] : zeros_like(primals[a]));
  }
  return out;
}

std::vector<array> Depends::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                                const std::vector<int>& argnums) {
  std::vector<array> out;
  for (size_t i = 0; i < num_inputs_; ++i) out.push_back(zeros_like(primals[i]));
  for (size_t k = 0; k < argnums.size(); ++k) {
    if (argnums[k] < static_cast<int>(num_inputs_)) out[argnums[k]] = tangents[k];
  }
  return out;
}

}  // namespace alloy
