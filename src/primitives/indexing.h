// Slicing and indexing primitives.
//
// Index semantics shared by every backend (Gather, Scatter): an index i of an
// axis of size n means i + n when -n <= i < 0 (wrapped, as MLX). A value still
// outside the axis is clamped to it by Gather and dropped by Scatter (JAX's
// rule), so a bad index never reads or writes out of bounds and code such as
// MLX's grid_sample reference, which gathers out-of-range neighbours and masks
// them afterwards, runs unchanged. (Python ints, lists and numpy indices are
// range-checked eagerly and raise IndexError.)
#pragma once

#include <tuple>

#include "alloy/ops.h"
#include "alloy/primitive.h"

namespace alloy {

// Number of elements a normalised (start, stop, step) selects.
ShapeElem slice_length(ShapeElem start, ShapeElem stop, ShapeElem step);
// `out` becomes the strided view of `in` that Slice(start, strides) describes.
void slice_view(const array& in, array& out, const Shape& start, const Shape& strides);

class Slice : public Primitive {
 public:
  // The fields that rebuild it (export_function).
  auto state() const { return std::tie(start_, stop_, strides_); }
  Slice(Stream s, Shape start, Shape stop, Shape strides)
      : Primitive(s), start_(std::move(start)), stop_(std::move(stop)), strides_(std::move(strides)) {}
  const char* name() const override { return "Slice"; }
  bool graph_capturable() const override { return true; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums, const std::vector<array>& outputs) override;
  std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                         const std::vector<int>& argnums) override;
  bool is_equivalent(const Primitive& o) const override;

 private:
  Shape start_, stop_, strides_;
};

// inputs: (dst, update); update already has the slice's shape.
class SliceUpdate : public Primitive {
 public:
  // The fields that rebuild it (export_function).
  auto state() const { return std::tie(start_, stop_, strides_); }
  SliceUpdate(Stream s, Shape start, Shape stop, Shape strides)
      : Primitive(s), start_(std::move(start)), stop_(std::move(stop)), strides_(std::move(strides)) {}
  const char* name() const override { return "SliceUpdate"; }
  bool graph_capturable() const override { return true; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums, const std::vector<array>& outputs) override;
  std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                         const std::vector<int>& argnums) override;

 private:
  Shape start_, stop_, strides_;
};

// inputs: (a, idx_0 .. idx_{k-1}); the index arrays share one shape I and
// one integer dtype. out[i..., j...] = a[block at (idx_0[i], .., idx_k[i]) on
// `axes`][j...] with the block of shape slice_sizes; out shape = I + slice_sizes.
class Gather : public Primitive {
 public:
  // The fields that rebuild it (export_function).
  auto state() const { return std::tie(axes_, slice_sizes_); }
  Gather(Stream s, std::vector<int> axes, Shape slice_sizes)
      : Primitive(s), axes_(std::move(axes)), slice_sizes_(std::move(slice_sizes)) {}
  const char* name() const override { return "Gather"; }
  bool graph_capturable() const override { return true; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums, const std::vector<array>& outputs) override;
  std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                         const std::vector<int>& argnums) override;

 private:
  std::vector<int> axes_;
  Shape slice_sizes_;
};

// inputs: (a, idx_0 .. idx_{k-1}, updates); updates shape = I + block shape
// (one dim per axis of a). out = a with each update block combined into the
// block at the indexed position by `reduce`, in index order. Derivatives
// (indexing.cpp): prod is exact with zeros; max/min ties share equally.
class Scatter : public Primitive {
 public:
  // The fields that rebuild it (export_function).
  auto state() const { return std::tie(axes_, reduce_); }
  Scatter(Stream s, std::vector<int> axes, ScatterReduce reduce)
      : Primitive(s), axes_(std::move(axes)), reduce_(reduce) {}
  const char* name() const override { return "Scatter"; }
  bool graph_capturable() const override { return true; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums, const std::vector<array>& outputs) override;
  std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                         const std::vector<int>& argnums) override;

 private:
  std::vector<int> axes_;
  ScatterReduce reduce_;
};

}  // namespace alloy
