// Sort, ArgSort, Partition and ArgPartition along the last axis (the ops move
// any other axis there). Values keep the input's dtype; indices are uint32
// (as MLX). Sorts are stable, with NaNs last (backend/common/sort_ops.h).
// A partition puts element kth in its sorted place with nothing greater
// before it and nothing smaller after; the order within each side is left
// open (the CPU gives MLX's, the GPU a full sort).
#pragma once

#include <tuple>

#include "alloy/primitive.h"

namespace alloy {

class Sort : public Primitive {
 public:
  // The fields that rebuild it (export_function).
  std::tuple<> state() const { return {}; }
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
  // The fields that rebuild it (export_function).
  std::tuple<> state() const { return {}; }
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

class Partition : public Primitive {
 public:
  // The fields that rebuild it (export_function).
  auto state() const { return std::tie(kth_); }
  Partition(Stream s, int kth) : Primitive(s), kth_(kth) {}
  const char* name() const override { return "partition"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums, const std::vector<array>& outputs) override;
  std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                         const std::vector<int>& argnums) override;
  bool is_equivalent(const Primitive& other) const override {
    auto* o = dynamic_cast<const Partition*>(&other);
    return o && o->kth_ == kth_;
  }

 private:
  int kth_;
};

class ArgPartition : public Primitive {
 public:
  // The fields that rebuild it (export_function).
  auto state() const { return std::tie(kth_); }
  ArgPartition(Stream s, int kth) : Primitive(s), kth_(kth) {}
  const char* name() const override { return "argpartition"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums, const std::vector<array>& outputs) override;
  std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                         const std::vector<int>& argnums) override;
  bool is_equivalent(const Primitive& other) const override {
    auto* o = dynamic_cast<const ArgPartition*>(&other);
    return o && o->kth_ == kth_;
  }

 private:
  int kth_;
};

}  // namespace alloy
