// The unary family: one primitive, the op code says which function.
#pragma once

#include <tuple>

#include "alloy/primitive.h"
#include "backend/common/unary_ops.h"

namespace alloy {

class Unary : public Primitive {
 public:
  // The fields that rebuild it (export_function).
  auto state() const { return std::tie(op_); }
  Unary(Stream s, UnaryOp op) : Primitive(s), op_(op) {}
  const char* name() const override { return unary_info(op_).name; }
  bool graph_capturable() const override { return true; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums, const std::vector<array>& outputs) override;
  std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                         const std::vector<int>& argnums) override;
  bool is_equivalent(const Primitive& other) const override;
  UnaryOp op() const { return op_; }

 private:
  UnaryOp op_;
};

// The output dtype of `op` on `in` (the runtime twin of unary_out).
Dtype unary_out_dtype(UnaryOp op, Dtype in);

}  // namespace alloy
