// CPU evaluation of the unary family.
#include <stdexcept>

#include "backend/common/unary_ops.h"
#include "backend/cpu/elementwise_loops.h"
#include "core/cast.h"
#include "primitives/unary.h"

namespace alloy {

namespace {

template <UnaryOp Op, typename In>
void unary_kernel(const array& in, array& out) {
  using Out = typename unary_out<Op, In>::type;
  using C = math::compute_t<In>;
  const unary::Fn<Op> fn;
  auto f = [fn](In x) { return cast_value<Out>(fn(C(x))); };
  const In* src = in.data<In>();
  if (cpu::is_dense(in)) {
    cpu::allocate_like(out, in);
    Out* dst = out.data<Out>();
    cpu::parallel_each(in.data_size(), [&](size_t i) { dst[i] = f(src[i]); });
    return;
  }
  cpu::allocate_row_contiguous(out);
  Out* dst = out.data<Out>();
  auto layout = cpu::collapse_dims(in.shape(), {in.strides(), out.strides()});
  cpu::map_rows(layout, src, dst, f);
}

}  // namespace

void Unary::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in = inputs[0];
  array& out = outputs[0];
  dispatch_unary_op(op_, [&](auto op_c) {
    constexpr UnaryOp Op = decltype(op_c)::value;
    dispatch_dtype(in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (unary_legal<Op, T>) {
        unary_kernel<Op, T>(in, out);
      } else {
        throw std::invalid_argument(std::string("[") + name() + "] not defined for dtype " +
                                    dtype_name(in.dtype()) + ".");
      }
    });
  });
}

}  // namespace alloy
