// Sort and ArgSort along the last axis (the ops move any other axis there).
// Sort's output has the input's dtype; ArgSort's is uint32 (as MLX). Both are
// stable, with NaNs last (backend/common/sort_ops.h).
#pragma once

#include "alloy/primitive.h"

namespace alloy {

class Sort : public Primitive {
 public:
  explicit Sort(Stream s) : Primitive(s) {}
  const char* name() const override { return "sort"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums, const std::vector<array>& outputs) override;
  std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                         const std::vector<int>& argnums) override;
  bool is_equivalent(const Primitive& other) const override { return dynamic_cast<const Sort*>(&other); }
};

class ArgSort : public Primitive {
 public:
  explicit ArgSort(Stream s) : Primitive(s) {}
  const char* name() const override { return "argsort"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums, const std::vector<array>& outputs) override;
  std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                         const std::vector<int>& argnums) override;
  bool is_equivalent(const Primitive& other) const override { return dynamic_cast<const ArgSort*>(&other); }
};

}  // namespace alloy
