#include "primitives/indexing.h"

#include <algorithm>
#include <stdexcept>

#include "primitives/shape.h"

namespace alloy {

ShapeElem slice_length(ShapeElem start, ShapeElem stop, ShapeElem step) {
  int64_t n = step > 0 ? (static_cast<int64_t>(stop) - start + step - 1) / step
                       : (static_cast<int64_t>(start) - stop + (-step) - 1) / (-step);
  return static_cast<ShapeElem>(std::max<int64_t>(n, 0));
}

void slice_view(const array& in, array& out, const Shape& start, const Shape& strides) {
  Strides st(in.ndim());
  int64_t offset = 0;
  for (int i = 0; i < in.ndim(); ++i) {
    st[i] = in.strides()[i] * strides[i];
    offset += in.strides()[i] * start[i];
  }
  make_view(in, out, st, offset);
}

namespace {
// Index arrays among the primals: positions 1 .. 1 + count.
std::vector<array> index_inputs(const std::vector<array>& primals, size_t count) {
  return std::vector<array>(primals.begin() + 1, primals.begin() + 1 + count);
}
bool wants(const std::vector<int>& argnums, int i) {
  return std::find(argnums.begin(), argnums.end(), i) != argnums.end();
}
}  // namespace

// ---- Slice

bool Slice::is_equivalent(const Primitive& o) const {
  auto* other = dynamic_cast<const Slice*>(&o);
  return other && other->start_ == start_ && other->stop_ == stop_ && other->strides_ == strides_;
}

std::vector<array> Slice::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                              const std::vector<int>&, const std::vector<array>&) {
  return {slice_update(zeros_like(primals[0], stream()), cotangents[0], start_, stop_, strides_, stream())};
}

std::vector<array> Slice::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                              const std::vector<int>&) {
  return {slice(tangents[0], start_, stop_, strides_, stream())};
}

// ---- SliceUpdate

std::vector<array> SliceUpdate::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                                    const std::vector<int>& argnums, const std::vector<array>&) {
  const array& cot = cotangents[0];
  std::vector<array> grads;
  for (int arg : argnums) {
    if (arg == 0) {
      // The overwritten region receives nothing.
      grads.push_back(slice_update(cot, zeros_like(primals[1], stream()), start_, stop_, strides_, stream()));
    } else {
      grads.push_back(slice(cot, start_, stop_, strides_, stream()));
    }
  }
  return grads;
}

std::vector<array> SliceUpdate::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                                    const std::vector<int>& argnums) {
  auto tangent = [&](int i) {
    auto it = std::find(argnums.begin(), argnums.end(), i);
    return it == argnums.end() ? zeros_like(primals[i], stream()) : tangents[it - argnums.begin()];
  };
  return {slice_update(tangent(0), tangent(1), start_, stop_, strides_, stream())};
}

// ---- Gather

std::vector<array> Gather::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                               const std::vector<int>& argnums, const std::vector<array>&) {
  std::vector<array> idx = index_inputs(primals, axes_.size());
  std::vector<array> grads;
  for (int arg : argnums) {
    if (arg == 0) {
      // Each gathered block adds its cotangent back where it came from
      // (repeated indices accumulate).
      grads.push_back(
          scatter(zeros_like(primals[0], stream()), idx, cotangents[0], axes_, ScatterReduce::add, stream()));
    } else {
      grads.push_back(zeros_like(primals[arg], stream()));  // indices are not differentiable
    }
  }
  return grads;
}

std::vector<array> Gather::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                               const std::vector<int>& argnums) {
  if (!wants(argnums, 0)) {
    Shape shape = axes_.empty() ? Shape{} : primals[1].shape();
    shape.insert(shape.end(), slice_sizes_.begin(), slice_sizes_.end());
    return {zeros(shape, primals[0].dtype(), stream())};
  }
  return {gather(tangents[0], index_inputs(primals, axes_.size()), axes_, slice_sizes_, stream())};
}

// ---- Scatter

std::vector<array> Scatter::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                                const std::vector<int>& argnums, const std::vector<array>&) {
  if (reduce_ != ScatterReduce::none && reduce_ != ScatterReduce::add) {
    throw std::invalid_argument("[scatter] the vjp is implemented for plain and additive scatters only.");
  }
  const array& cot = cotangents[0];
  const int upd = static_cast<int>(primals.size()) - 1;
  std::vector<array> idx = index_inputs(primals, axes_.size());
  const array& updates = primals[upd];
  std::vector<array> grads;
  for (int arg : argnums) {
    if (arg == 0) {
      grads.push_back(reduce_ == ScatterReduce::add
                          ? cot
                          : scatter(cot, idx, zeros_like(updates, stream()), axes_, ScatterReduce::none, stream()));
    } else if (arg == upd) {
      Shape block(updates.shape().end() - primals[0].ndim(), updates.shape().end());
      grads.push_back(gather(cot, idx, axes_, block, stream()));
    } else {
      grads.push_back(zeros_like(primals[arg], stream()));
    }
  }
  return grads;
}

std::vector<array> Scatter::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                                const std::vector<int>& argnums) {
  if (reduce_ != ScatterReduce::none && reduce_ != ScatterReduce::add) {
    throw std::invalid_argument("[scatter] the jvp is implemented for plain and additive scatters only.");
  }
  const int upd = static_cast<int>(primals.size()) - 1;
  auto tangent = [&](int i) {
    auto it = std::find(argnums.begin(), argnums.end(), i);
    return it == argnums.end() ? zeros_like(primals[i], stream()) : tangents[it - argnums.begin()];
  };
  return {scatter(tangent(0), index_inputs(primals, axes_.size()), tangent(upd), axes_, reduce_, stream())};
}

}  // namespace alloy
