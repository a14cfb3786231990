// CPU evaluation of select (where).
#include "backend/common/ternary_ops.h"
#include "backend/cpu/elementwise_loops.h"
#include "primitives/ternary.h"

namespace alloy {

namespace {

template <typename T>
void select_kernel(const array& c, const array& x, const array& y, array& out) {
  const ternary::Select fn;
  const bool* pc = c.data<bool>();
  const T* px = x.data<T>();
  const T* py = y.data<T>();
  cpu::allocate_row_contiguous(out);
  T* o = out.data<T>();
  if (c.flags().row_contiguous && x.flags().row_contiguous && y.flags().row_contiguous) {
    cpu::parallel_chunks(out.size(), [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) o[i] = fn(pc[i], px[i], py[i]);
    });
    return;
  }
  auto layout = cpu::collapse_dims(out.shape(), {c.strides(), x.strides(), y.strides(), out.strides()});
  cpu::for_each_row<4>(layout, [&](const int64_t* base, int64_t n, const int64_t* st) {
    const bool* cc = pc + base[0];
    const T* xx = px + base[1];
    const T* yy = py + base[2];
    T* d = o + base[3];
    for (int64_t i = 0; i < n; ++i) d[i * st[3]] = fn(cc[i * st[0]], xx[i * st[1]], yy[i * st[2]]);
  });
}

}  // namespace

void Select::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  dispatch_dtype(inputs[1].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    select_kernel<T>(inputs[0], inputs[1], inputs[2], outputs[0]);
  });
}

}  // namespace alloy
