// View (same bytes, another dtype) and AsStrided (arbitrary strides over the
// row-major elements). Both share their input's memory where the layout
// allows; the backends only make the input row-contiguous first when needed.
#pragma once

#include <tuple>

#include "alloy/primitive.h"

namespace alloy {

class View : public Primitive {
 public:
  // The fields that rebuild it (export_function).
  auto state() const { return std::tie(dtype_); }
  View(Stream s, Dtype dtype) : Primitive(s), dtype_(dtype) {}
  const char* name() const override { return "View"; }
  bool graph_capturable() const override { return true; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  bool is_equivalent(const Primitive& o) const override;

 private:
  Dtype dtype_;
};

class AsStrided : public Primitive {
 public:
  // The fields that rebuild it (export_function).
  auto state() const { return std::tie(shape_, strides_, offset_); }
  AsStrided(Stream s, Shape shape, Strides strides, size_t offset)
      : Primitive(s), shape_(std::move(shape)), strides_(std::move(strides)), offset_(offset) {}
  const char* name() const override { return "AsStrided"; }
  bool graph_capturable() const override { return true; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums, const std::vector<array>& outputs) override;
  std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                         const std::vector<int>& argnums) override;
  bool is_equivalent(const Primitive& o) const override;
  const Strides& strides() const { return strides_; }
  size_t offset() const { return offset_; }

 private:
  Shape shape_;
  Strides strides_;
  size_t offset_;
};

// The layout halves every backend shares (no memory is touched):
// `out` shares `in`'s memory read as out's dtype. `in` must be row-contiguous
// unless the item sizes match; false (nothing done) when in's first byte is
// not on a boundary of out's elements, so the caller must copy first.
bool reinterpret_view(const array& in, array& out);
// `out` views row-contiguous `in` with AsStrided's strides and offset.
void as_strided_view(const array& in, array& out, const AsStrided& p);

}  // namespace alloy
