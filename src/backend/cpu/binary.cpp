// CPU evaluation of the binary family. Inputs are broadcast views of one
// shape; the fast paths are both dense in the same order, and one side a
// broadcast scalar; everything else walks innermost rows with strides.
#include <stdexcept>

#include "backend/common/binary_ops.h"
#include "backend/cpu/elementwise_loops.h"
#include "core/cast.h"
#include "primitives/binary.h"

namespace alloy {

namespace {

// One element reachable (a 0-d array or a scalar broadcast with stride 0).
bool is_scalar_like(const array& a) { return a.data_size() == 1; }

template <BinaryOp Op, typename T>
void binary_kernel(const array& a, const array& b, array& out) {
  using Out = binary_out_t<Op, T>;
  using C = math::compute_t<T>;
  const binary::Fn<Op> fn;
  auto f = [fn](T x, T y) { return cast_value<Out>(fn(C(x), C(y))); };
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  const bool same_dense = cpu::is_dense(a) && cpu::is_dense(b) && a.strides() == b.strides();
  if (same_dense) {
    cpu::allocate_like(out, a);
    Out* o = out.data<Out>();
    cpu::parallel_each(a.data_size(), [&](size_t i) { o[i] = f(pa[i], pb[i]); });
    return;
  }
  if (is_scalar_like(a) && cpu::is_dense(b)) {
    cpu::allocate_like(out, b);
    Out* o = out.data<Out>();
    const T x = pa[0];
    cpu::parallel_each(b.data_size(), [&](size_t i) { o[i] = f(x, pb[i]); });
    return;
  }
  if (is_scalar_like(b) && cpu::is_dense(a)) {
    cpu::allocate_like(out, a);
    Out* o = out.data<Out>();
    const T y = pb[0];
    cpu::parallel_each(a.data_size(), [&](size_t i) { o[i] = f(pa[i], y); });
    return;
  }
  cpu::allocate_row_contiguous(out);
  Out* o = out.data<Out>();
  auto layout = cpu::collapse_dims(out.shape(), {a.strides(), b.strides(), out.strides()});
  cpu::for_each_row<3>(layout, [&](const int64_t* base, int64_t n, const int64_t* st) {
    const T* x = pa + base[0];
    const T* y = pb + base[1];
    Out* d = o + base[2];
    // The common row shapes get loops the compiler can vectorise.
    const size_t len = static_cast<size_t>(n);
    if (st[2] == 1 && st[0] == 1 && st[1] == 1) {
      cpu::each_index(0, len, [&](size_t i) { d[i] = f(x[i], y[i]); });
    } else if (st[2] == 1 && st[0] == 1 && st[1] == 0) {
      const T yv = y[0];
      cpu::each_index(0, len, [&](size_t i) { d[i] = f(x[i], yv); });
    } else if (st[2] == 1 && st[0] == 0 && st[1] == 1) {
      const T xv = x[0];
      cpu::each_index(0, len, [&](size_t i) { d[i] = f(xv, y[i]); });
    } else {
      const int64_t s0 = st[0], s1 = st[1], s2 = st[2];
      cpu::each_index(0, len, [&](size_t i) {
        const int64_t k = static_cast<int64_t>(i);
        d[k * s2] = f(x[k * s0], y[k * s1]);
      });
    }
  });
}

}  // namespace

void Binary::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& a = inputs[0];
  const array& b = inputs[1];
  array& out = outputs[0];
  dispatch_binary_op(op_, [&](auto op_c) {
    constexpr BinaryOp Op = decltype(op_c)::value;
    dispatch_dtype(a.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (binary_legal<Op, T>) {
        binary_kernel<Op, T>(a, b, out);
      } else {
        throw std::invalid_argument(std::string("[") + name() + "] not defined for dtype " +
                                    dtype_name(a.dtype()) + ".");
      }
    });
  });
}

}  // namespace alloy
