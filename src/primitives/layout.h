// Primitives that copy or re-view memory without arithmetic.
#pragma once

#include <tuple>

#include "alloy/primitive.h"

namespace alloy {

// Row-contiguous copy of any strided input, converting the dtype on the way
// (astype, contiguous, copy).
class AsType : public Primitive {
 public:
  // The fields that rebuild it (export_function).
  auto state() const { return std::tie(dtype_); }
  AsType(Stream s, Dtype dtype) : Primitive(s), dtype_(dtype) {}
  const char* name() const override { return "AsType"; }
  bool graph_capturable() const override { return true; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums, const std::vector<array>& outputs) override;
  std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                         const std::vector<int>& argnums) override;
  bool is_equivalent(const Primitive& o) const override;
  Dtype dtype() const { return dtype_; }

 private:
  Dtype dtype_;
};

// A view with stride 0 along broadcast dimensions.
class Broadcast : public Primitive {
 public:
  // The fields that rebuild it (export_function).
  auto state() const { return std::tie(shape_); }
  Broadcast(Stream s, Shape shape) : Primitive(s), shape_(std::move(shape)) {}
  const char* name() const override { return "Broadcast"; }
  bool graph_capturable() const override { return true; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums, const std::vector<array>& outputs) override;
  std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                         const std::vector<int>& argnums) override;

 private:
  Shape shape_;
};

// Computes the view Broadcast produces (shared by every backend).
void broadcast_view(const array& in, array& out);

}  // namespace alloy

namespace alloy {

// Shares its input's memory. `Identity` marks where a transformation starts
// tracing; `StopGradient` blocks derivatives.
class Identity : public Primitive {
 public:
  // The fields that rebuild it (export_function).
  std::tuple<> state() const { return {}; }
  explicit Identity(Stream s) : Primitive(s) {}
  const char* name() const override { return "Identity"; }
  bool graph_capturable() const override { return true; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums, const std::vector<array>& outputs) override;
  std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                         const std::vector<int>& argnums) override;
};

class StopGradient : public Identity {
 public:
  // The fields that rebuild it (export_function).
  std::tuple<> state() const { return {}; }
  using Identity::Identity;
  const char* name() const override { return "StopGradient"; }
  bool graph_capturable() const override { return true; }
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums, const std::vector<array>& outputs) override;
  std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                         const std::vector<int>& argnums) override;
};

}  // namespace alloy
