#include "backend/cpu/strided.h"

#include "alloy/allocator.h"

namespace alloy::cpu {

CollapsedLayout collapse_dims(const Shape& shape, const std::vector<Strides>& strides) {
  CollapsedLayout out;
  const size_t n_ops = strides.size();
  out.strides.resize(n_ops);
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) continue;  // size-1 dims never move an offset
    bool merge = !out.shape.empty();
    for (size_t k = 0; merge && k < n_ops; ++k) {
      merge = out.strides[k].back() == strides[k][i] * shape[i];
    }
    if (merge) {
      out.shape.back() *= shape[i];
      for (size_t k = 0; k < n_ops; ++k) out.strides[k].back() = strides[k][i];
    } else {
      out.shape.push_back(shape[i]);
      for (size_t k = 0; k < n_ops; ++k) out.strides[k].push_back(strides[k][i]);
    }
  }
  for (auto d : shape) {
    if (d == 0) {  // empty: keep a zero extent so loops run nothing
      out.shape = {0};
      for (auto& s : out.strides) s = {1};
      break;
    }
  }
  return out;
}

void allocate_row_contiguous(array& out) { out.set_data(allocator(Device(Device::cpu)).malloc(out.nbytes())); }

}  // namespace alloy::cpu
