// The ternary family: select(condition, x, y), inputs broadcast to one shape,
// x and y promoted to one dtype, the condition bool.
#pragma once

#include <tuple>

#include "alloy/primitive.h"

namespace alloy {

class Select : public Primitive {
 public:
  // The fields that rebuild it (export_function).
  std::tuple<> state() const { return {}; }
  explicit Select(Stream s) : Primitive(s) {}
  const char* name() const override { return "Select"; }
  bool graph_capturable() const override { return true; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums, const std::vector<array>& outputs) override;
  std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                         const std::vector<int>& argnums) override;
  bool is_equivalent(const Primitive& other) const override { return dynamic_cast<const Select*>(&other); }
};

}  // namespace alloy
