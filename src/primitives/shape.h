// Primitives that change an array's shape: reshape and transpose (views when
// the memory allows), concatenate (a copy).
//
// The view computations are plain functions of (input layout -> output
// layout) so every backend calls the same code: a view never touches memory.
#pragma once

#include <tuple>

#include "alloy/primitive.h"

namespace alloy {

// Flags and reachable element count of a view with `strides` over `shape`.
ArrayFlags view_flags(const Shape& shape, const Strides& strides, size_t* data_size);
// Makes `out` a view of `in`'s memory with the given strides, starting
// `offset` elements after `in`'s first element.
void make_view(const array& in, array& out, const Strides& strides, int64_t offset = 0);

// Strides that let `new_shape` walk the same elements as (old_shape,
// old_strides) in row-major order without copying; false when no such
// strides exist (the data must be copied).
bool reshape_strides(const Shape& old_shape, const Strides& old_strides, const Shape& new_shape,
                     Strides& new_strides);
// Makes `out` a view of `in` reshaped; false (nothing done) when a copy is needed.
bool reshape_view(const array& in, array& out);
// `out` becomes the view of `in` with its axes permuted.
void transpose_view(const array& in, array& out, const std::vector<int>& axes);

class Reshape : public Primitive {
 public:
  // The fields that rebuild it (export_function).
  auto state() const { return std::tie(shape_); }
  Reshape(Stream s, Shape shape) : Primitive(s), shape_(std::move(shape)) {}
  const char* name() const override { return "Reshape"; }
  bool graph_capturable() const override { return true; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums, const std::vector<array>& outputs) override;
  std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                         const std::vector<int>& argnums) override;
  bool is_equivalent(const Primitive& o) const override;

 private:
  Shape shape_;
};

class Transpose : public Primitive {
 public:
  // The fields that rebuild it (export_function).
  auto state() const { return std::tie(axes_); }
  Transpose(Stream s, std::vector<int> axes) : Primitive(s), axes_(std::move(axes)) {}
  const char* name() const override { return "Transpose"; }
  bool graph_capturable() const override { return true; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums, const std::vector<array>& outputs) override;
  std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                         const std::vector<int>& argnums) override;
  bool is_equivalent(const Primitive& o) const override;

 private:
  std::vector<int> axes_;
};

// Inputs share a dtype and all dimensions but `axis`.
class Concatenate : public Primitive {
 public:
  // The fields that rebuild it (export_function).
  auto state() const { return std::tie(axis_); }
  Concatenate(Stream s, int axis) : Primitive(s), axis_(axis) {}
  const char* name() const override { return "Concatenate"; }
  bool graph_capturable() const override { return true; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums, const std::vector<array>& outputs) override;
  std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                         const std::vector<int>& argnums) override;

 private:
  int axis_;
};

}  // namespace alloy
