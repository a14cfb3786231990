// A chain of elementwise primitives that mx.compile fused into one node
// (transforms/fuse_elementwise.cpp), selects included: the same ops, run over blocks of
// elements that stay in cache instead of one pass over memory per op.
#pragma once

#include <cstdint>
#include <vector>

#include "alloy/primitive.h"
#include "backend/common/binary_ops.h"
#include "backend/common/reduce_ops.h"
#include "backend/common/unary_ops.h"

namespace alloy {

// One value of the fused program, in order; operands are earlier steps.
struct FusedStep {
  enum class Kind : uint8_t { Input, Unary, Binary, Cast, Select };
  Kind kind = Kind::Input;
  Dtype dtype = Dtype::float32;  // the value's type
  int input = -1;                // Input: which primitive input (a size-1 one is broadcast)
  UnaryOp unary{};               // Unary: the op
  BinaryOp binary{};             // Binary: the op
  int a = -1, b = -1, c = -1;    // operands (steps); Select: a ? b : c
};

class FusedElementwise : public Primitive {
 public:
  // The last step is the output.
  FusedElementwise(Stream s, std::vector<FusedStep> steps) : Primitive(s), steps_(std::move(steps)) {}
  // The last step's values (of shape `domain`) reduced by `op` over the
  // trailing `axes`: the output's size says how many runs; each run is
  // reduced in the order the Reduce kernel uses, so the result is the
  // unfused one.
  FusedElementwise(Stream s, std::vector<FusedStep> steps, Shape domain, ReduceOp op, std::vector<int> axes)
      : Primitive(s),
        steps_(std::move(steps)),
        domain_(std::move(domain)),
        reduce_(op),
        axes_(std::move(axes)),
        reduces_(true) {}
  const char* name() const override { return "Compiled"; }
  bool graph_capturable() const override { return true; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  const std::vector<FusedStep>& steps() const { return steps_; }

 private:
  std::vector<FusedStep> steps_;
  Shape domain_;
  ReduceOp reduce_{};
  std::vector<int> axes_;
  bool reduces_ = false;
};

}  // namespace alloy
