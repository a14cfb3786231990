// Softmax and logsumexp over the last axis as single nodes, so each backend
// reads a row once (src/backend/*/softmax.cpp). The ops (src/ops/
// reduction.cpp) build them for trailing axes and fall back to the composite
// graph for other axes. Both compute in float32 (float64 for float64 input)
// and round once.
#pragma once

#include <tuple>

#include "alloy/primitive.h"

namespace alloy {

// Output: the input's shape and dtype (a float dtype).
class Softmax : public Primitive {
 public:
  // The fields that rebuild it (export_function).
  std::tuple<> state() const { return {}; }
  explicit Softmax(Stream s) : Primitive(s) {}
  const char* name() const override { return "Softmax"; }
  bool graph_capturable() const override { return true; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums, const std::vector<array>& outputs) override;
  std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                         const std::vector<int>& argnums) override;
  bool is_equivalent(const Primitive& other) const override;
};

// Output: the input's shape with the last axis of size 1, the input's dtype.
class LogSumExp : public Primitive {
 public:
  std::tuple<> state() const { return {}; }
  explicit LogSumExp(Stream s) : Primitive(s) {}
  const char* name() const override { return "LogSumExp"; }
  bool graph_capturable() const override { return true; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums, const std::vector<array>& outputs) override;
  std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                         const std::vector<int>& argnums) override;
  bool is_equivalent(const Primitive& other) const override;
};

}  // namespace alloy
