// mx.depends: outputs share the first `num_inputs` inputs' memory; the rest
// of the inputs are evaluated first and otherwise unused.
#pragma once

#include <tuple>

#include "alloy/primitive.h"

namespace alloy {

class Depends : public Primitive {
 public:
  // The fields that rebuild it (export_function).
  auto state() const { return std::tie(num_inputs_); }
  Depends(Stream s, size_t num_inputs) : Primitive(s), num_inputs_(num_inputs) {}
  const char* name() const override { return "Depends"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums, const std::vector<array>& outputs) override;
  std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                         const std::vector<int>& argnums) override;

 private:
  size_t num_inputs_;
};

}  // namespace alloy
