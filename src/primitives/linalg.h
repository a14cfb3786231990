// Matrix multiplication.
#pragma once

#include <tuple>

#include "alloy/primitive.h"

namespace alloy {

// inputs: a (..., M, K) and b (..., K, N) with equal batch shapes (the op
// broadcasts them first); out (..., M, N). float32/float64/complex64 go to
// BLAS, float16/bfloat16 through float32, integers through a plain loop.
class Matmul : public Primitive {
 public:
  // The fields that rebuild it (export_function).
  std::tuple<> state() const { return {}; }
  explicit Matmul(Stream s) : Primitive(s) {}
  const char* name() const override { return "Matmul"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums, const std::vector<array>& outputs) override;
  std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                         const std::vector<int>& argnums) override;
  bool is_equivalent(const Primitive& o) const override { return dynamic_cast<const Matmul*>(&o) != nullptr; }
};

}  // namespace alloy
