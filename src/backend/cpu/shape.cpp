// CPU evaluation of the shape primitives, and the strided copy the copying
// primitives of this family and of indexing share.
#include "backend/cpu/elementwise_loops.h"
#include "backend/cpu/strided.h"
#include "primitives/shape.h"

namespace alloy {
namespace cpu {

// Copies every element of `src` to `dst` (typed like src) at the element
// offsets given by `dst_strides` (a sub-block of a larger output, say).
void copy_strided(const array& src, void* dst, const Strides& dst_strides) {
  if (src.size() == 0) return;
  auto layout = collapse_dims(src.shape(), {src.strides(), dst_strides});
  dispatch_dtype(src.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = src.data<T>();
    T* out = static_cast<T*>(dst);
    map_rows(layout, in, out, [](T x) { return x; });
  });
}

}  // namespace cpu

void Reshape::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in = inputs[0];
  array& out = outputs[0];
  if (reshape_view(in, out)) return;
  // The elements are not one row-major run in memory: copy them into order.
  cpu::allocate_row_contiguous(out);
  Strides row = row_major_strides(in.shape());
  cpu::copy_strided(in, out.raw_data(), row);
}

void Transpose::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  transpose_view(inputs[0], outputs[0], axes_);
}

void Transpose::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  transpose_view(inputs[0], outputs[0], axes_);
}

void Concatenate::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  array& out = outputs[0];
  cpu::allocate_row_contiguous(out);
  const Strides& out_strides = out.strides();
  char* base = static_cast<char*>(out.raw_data());
  int64_t start = 0;
  for (const array& in : inputs) {
    cpu::copy_strided(in, base + start * out_strides[axis_] * static_cast<int64_t>(out.itemsize()), out_strides);
    start += in.shape(axis_);
  }
}

}  // namespace alloy
