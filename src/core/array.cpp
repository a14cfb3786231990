#include "alloy/array.h"

#include <cstring>
#include <stdexcept>

#include "alloy/primitive.h"
#include "alloy/transforms.h"
#include "core/cast.h"

namespace alloy {

Data::~Data() {
  if (!external_owner && buffer.ptr) {
    allocator(buffer.device).free(buffer);
  }
}

Strides row_major_strides(const Shape& shape) {
  Strides s(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) {
    s[i] = s[i + 1] * std::max<int64_t>(shape[i + 1], 1);
  }
  return s;
}

size_t shape_size(const Shape& shape) {
  size_t n = 1;
  for (auto d : shape) {
    if (d < 0) throw std::invalid_argument("[array] negative dimension " + std::to_string(d) + " in shape.");
    n *= static_cast<size_t>(d);
  }
  return n;
}

array::ArrayDesc::ArrayDesc(Shape s, Dtype d)
    : shape(std::move(s)), strides(row_major_strides(shape)), size(shape_size(shape)), dtype(d) {}

array::ArrayDesc::~ArrayDesc() {
  // Release long input chains iteratively: recursive destruction of a deep
  // graph (a loop of ten thousand adds) would overflow the stack.
  std::vector<array> pending = std::move(inputs);
  while (!pending.empty()) {
    array a = std::move(pending.back());
    pending.pop_back();
    if (a.desc_.use_count() == 1) {
      for (auto& in : a.desc_->inputs) pending.push_back(std::move(in));
      a.desc_->inputs.clear();
    }
  }
}

void convert_scalar(const void* src, Dtype src_dtype, void* dst, Dtype dst_dtype) {
  dispatch_dtype(src_dtype, [&](auto in_tag) {
    using In = typename decltype(in_tag)::type;
    dispatch_dtype(dst_dtype, [&](auto out_tag) {
      using Out = typename decltype(out_tag)::type;
      In v;
      std::memcpy(&v, src, sizeof(In));
      Out o = cast_value<Out>(v);
      std::memcpy(dst, &o, sizeof(Out));
    });
  });
}

void array::init_from_host(const void* src, Shape shape, Dtype src_dtype, Dtype dtype) {
  desc_ = std::make_shared<ArrayDesc>(std::move(shape), dtype);
  set_data(allocator(Device(Device::cpu)).malloc(nbytes()));
  size_t n = size();
  dispatch_dtype(src_dtype, [&](auto in_tag) {
    using In = typename decltype(in_tag)::type;
    dispatch_dtype(dtype, [&](auto out_tag) {
      using Out = typename decltype(out_tag)::type;
      const In* in = static_cast<const In*>(src);
      Out* out = data<Out>();
      for (size_t i = 0; i < n; ++i) out[i] = cast_value<Out>(in[i]);
    });
  });
  desc_->status = Status::evaluated;
}

array::array(std::shared_ptr<Data> data, Shape shape, Strides strides, Dtype dtype, int64_t offset)
    : desc_(std::make_shared<ArrayDesc>(std::move(shape), dtype)) {
  // Flags and data_size from the strides.
  ArrayFlags f;
  size_t n = desc_->size;
  Strides row = row_major_strides(desc_->shape);
  f.row_contiguous = true;
  f.col_contiguous = true;
  int64_t expect = 1;
  for (int i = 0; i < ndim(); ++i) {
    if (desc_->shape[i] != 1 && strides[i] != row[i]) f.row_contiguous = false;
  }
  for (int i = 0; i < ndim(); ++i) {
    if (desc_->shape[i] != 1 && strides[i] != expect) f.col_contiguous = false;
    expect *= desc_->shape[i];
  }
  f.contiguous = f.row_contiguous || f.col_contiguous;
  int64_t lo = 0, hi = 0;
  for (int i = 0; i < ndim(); ++i) {
    if (desc_->shape[i] == 0) continue;
    int64_t span = strides[i] * (desc_->shape[i] - 1);
    (span < 0 ? lo : hi) += span;
  }
  size_t data_size = n == 0 ? 0 : static_cast<size_t>(hi - lo + 1);
  set_data(std::move(data), data_size, std::move(strides), f, offset);
  desc_->status = Status::evaluated;
}

array::array(Shape shape, Dtype dtype, std::shared_ptr<Primitive> primitive, std::vector<array> inputs)
    : desc_(std::make_shared<ArrayDesc>(std::move(shape), dtype)) {
  desc_->primitive = std::move(primitive);
  desc_->inputs = std::move(inputs);
  for (auto& in : desc_->inputs) {
    if (in.is_tracer()) desc_->is_tracer = true;
  }
}

std::vector<array> array::make_arrays(std::vector<Shape> shapes, const std::vector<Dtype>& dtypes,
                                      const std::shared_ptr<Primitive>& primitive,
                                      const std::vector<array>& inputs) {
  auto specs = std::make_shared<std::vector<std::pair<Shape, Dtype>>>();
  for (size_t i = 0; i < shapes.size(); ++i) specs->emplace_back(shapes[i], dtypes[i]);
  std::vector<array> outs;
  outs.reserve(shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) {
    outs.emplace_back(std::move(shapes[i]), dtypes[i], primitive, inputs);
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    outs[i].desc_->position = static_cast<int>(i);
    outs[i].desc_->output_specs = specs;
    for (size_t j = 0; j < outs.size(); ++j) {
      if (i != j) outs[i].desc_->siblings.push_back(outs[j].desc_);
    }
  }
  return outs;
}

ShapeElem array::shape(int dim) const {
  int d = dim < 0 ? dim + ndim() : dim;
  if (d < 0 || d >= ndim()) {
    throw std::out_of_range("[array.shape] axis " + std::to_string(dim) + " is out of range for an array with " +
                            std::to_string(ndim()) + " dimensions.");
  }
  return desc_->shape[d];
}

int64_t array::strides(int dim) const {
  int d = dim < 0 ? dim + ndim() : dim;
  return desc_->strides.at(d);
}

std::vector<array> array::siblings() const {
  std::vector<array> out;
  for (auto& w : desc_->siblings) {
    if (auto s = w.lock()) out.emplace_back(s);
  }
  return out;
}

std::vector<array> array::outputs() const {
  if (!desc_->output_specs) return {*this};
  const auto& specs = *desc_->output_specs;
  std::vector<array> out;
  out.reserve(specs.size());
  // Outputs the user dropped are stood in for by one fresh group of the same
  // node (built on first need): evaluated with this node, a stand-in just
  // receives its output; read later (a vjp rule reading `outputs`), it must
  // still be output i of the primitive, which a lone single-output node of a
  // multi-output primitive would not be.
  std::vector<array> stand_ins;
  size_t k = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    if (static_cast<int>(i) == desc_->position) {
      out.push_back(*this);
      continue;
    }
    auto s = k < desc_->siblings.size() ? desc_->siblings[k++].lock() : nullptr;
    if (s) {
      out.emplace_back(s);
      continue;
    }
    if (stand_ins.empty()) {
      std::vector<Shape> shapes;
      std::vector<Dtype> dtypes;
      for (const auto& [shape, dtype] : specs) {
        shapes.push_back(shape);
        dtypes.push_back(dtype);
      }
      stand_ins = make_arrays(std::move(shapes), dtypes, desc_->primitive, desc_->inputs);
    }
    out.push_back(stand_ins[i]);
  }
  return out;
}

void array::detach() {
  desc_->primitive.reset();
  desc_->inputs.clear();
  desc_->siblings.clear();
  desc_->output_specs.reset();
  desc_->position = 0;
}

void array::eval() {
  if (!is_evaluated()) alloy::eval({*this});
}

Device array::device() const {
  return desc_->data ? desc_->data->buffer.device : Device(Device::cpu);
}

void array::set_data(Buffer buffer) {
  desc_->data = std::make_shared<Data>(buffer);
  desc_->data_ptr = buffer.ptr;
  desc_->offset = 0;
  desc_->data_size = desc_->size;
  desc_->strides = row_major_strides(desc_->shape);
  desc_->flags = ArrayFlags{};
}

void array::set_data(std::shared_ptr<Data> data, size_t data_size, Strides strides, ArrayFlags flags,
                     int64_t offset) {
  desc_->data = std::move(data);
  desc_->offset = offset;
  desc_->data_ptr = static_cast<char*>(desc_->data->buffer.ptr) + offset * static_cast<int64_t>(itemsize());
  desc_->data_size = data_size;
  desc_->strides = std::move(strides);
  desc_->flags = flags;
}

void array::copy_shared_buffer(const array& other, const Strides& strides, ArrayFlags flags, size_t data_size,
                               int64_t offset) {
  set_data(other.desc_->data, data_size, strides, flags, other.offset() + offset);
}

void array::copy_shared_buffer(const array& other) {
  copy_shared_buffer(other, other.strides(), other.flags(), other.data_size());
}

}  // namespace alloy
