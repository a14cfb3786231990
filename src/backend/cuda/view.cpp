// GPU evaluation of View and AsStrided: the CPU's views, with strided copies
// (elementwise.h) where the input's layout does not allow a view.
#include "backend/cuda/device.h"
#include "backend/cuda/elementwise.h"
#include "backend/cuda/kernels.h"
#include "primitives/view.h"

namespace alloy {

using namespace cuda;

void View::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in = inputs[0];
  array& out = outputs[0];
  if (in.itemsize() == out.itemsize()) {
    reinterpret_view(in, out);
    return;
  }
  CUstream s = stream_for(stream());
  array x = row_contiguous(in, s, "view");
  if (reinterpret_view(x, out)) {
    if (!x.is_same(in)) note_pending(stream());
    return;
  }
  // A row-contiguous input that starts mid-element of the new dtype: copy
  // its elements (its own dtype) into out's fresh memory, byte for byte.
  allocate_row_contiguous(out);
  copy_into(x, out.raw_data(), x.dtype(), row_major_strides(x.shape()), s, "view");
  note_pending(stream());
}

void AsStrided::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in = inputs[0];
  array x = row_contiguous(in, stream_for(stream()), "as_strided");
  as_strided_view(x, outputs[0], *this);
  if (!x.is_same(in)) note_pending(stream());
}

}  // namespace alloy
