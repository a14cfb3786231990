// CPU evaluation of the copy/view primitives.
#include "alloy/allocator.h"
#include "backend/cpu/strided.h"
#include "core/cast.h"
#include "primitives/layout.h"

namespace alloy {

void AsType::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in = inputs[0];
  array& out = outputs[0];
  cpu::allocate_row_contiguous(out);
  auto layout = cpu::collapse_dims(in.shape(), {in.strides(), out.strides()});
  dispatch_dtype(in.dtype(), [&](auto in_tag) {
    using In = typename decltype(in_tag)::type;
    dispatch_dtype(out.dtype(), [&](auto out_tag) {
      using Out = typename decltype(out_tag)::type;
      const In* src = in.data<In>();
      Out* dst = out.data<Out>();
      if (in.flags().row_contiguous) {
        for (size_t i = 0, n = in.size(); i < n; ++i) dst[i] = cast_value<Out>(src[i]);
        return;
      }
      cpu::for_each_offset<2>(layout, [&](const int64_t* off) { dst[off[1]] = cast_value<Out>(src[off[0]]); });
    });
  });
}

void Broadcast::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  broadcast_view(inputs[0], outputs[0]);
}

void Broadcast::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  broadcast_view(inputs[0], outputs[0]);
}

}  // namespace alloy
