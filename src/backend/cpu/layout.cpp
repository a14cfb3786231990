// CPU evaluation of the copy/view primitives.
#include <algorithm>

#include "alloy/allocator.h"
#include "backend/cpu/elementwise_loops.h"
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
      const size_t n = in.size();
      if (n != 0 && in.data_size() == 1) {
        // One value everywhere (mx.full, zeros, ones: a broadcast scalar):
        // converted once, then filled by the pool rather than copied element
        // by element through the strided loop below on one thread.
        const Out v = cast_value<Out>(src[0]);
        cpu::parallel_chunks(n, [&](size_t b, size_t e) { std::fill(dst + b, dst + e, v); });
        return;
      }
      if (in.flags().row_contiguous) {
        cpu::parallel_each(n, [&](size_t i) { dst[i] = cast_value<Out>(src[i]); });
        return;
      }
      cpu::map_rows(layout, src, dst, [](In x) { return cast_value<Out>(x); });
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
