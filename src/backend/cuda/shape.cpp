// GPU evaluation of the copying shape and slicing primitives: views where the
// shared view functions allow, strided copies (elementwise.h) otherwise.
#include "backend/cuda/elementwise.h"
#include "primitives/indexing.h"
#include "primitives/shape.h"

namespace alloy {

using namespace cuda;

void Reshape::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in = inputs[0];
  array& out = outputs[0];
  if (reshape_view(in, out)) return;
  allocate_row_contiguous(out);
  copy_into(in, out.raw_data(), out.dtype(), row_major_strides(in.shape()), stream_for(stream()), "reshape");
  note_pending(stream());
}

void Concatenate::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  array& out = outputs[0];
  allocate_row_contiguous(out);
  CUstream s = stream_for(stream());
  const Strides& st = out.strides();
  char* base = static_cast<char*>(out.raw_data());
  int64_t start = 0;
  for (const array& in : inputs) {
    copy_into(in, base + start * st[axis_] * static_cast<int64_t>(out.itemsize()), out.dtype(), st, s,
              "concatenate");
    start += in.shape(axis_);
  }
  note_pending(stream());
}

void SliceUpdate::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& dst = inputs[0];
  const array& update = inputs[1];
  array& out = outputs[0];
  allocate_row_contiguous(out);
  CUstream s = stream_for(stream());
  copy_into(dst, out.raw_data(), out.dtype(), out.strides(), s, "slice_update");
  if (update.size() > 0) {
    Strides region(out.ndim());
    int64_t offset = 0;
    for (int i = 0; i < out.ndim(); ++i) {
      region[i] = out.strides()[i] * strides_[i];
      offset += out.strides()[i] * start_[i];
    }
    copy_into(update, static_cast<char*>(out.raw_data()) + offset * static_cast<int64_t>(out.itemsize()),
              out.dtype(), region, s, "slice_update");
  }
  note_pending(stream());
}

}  // namespace alloy
