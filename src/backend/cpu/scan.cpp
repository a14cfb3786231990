// CPU evaluation of scans. The input is made row-contiguous and seen as
// [outer, n, inner]: with inner == 1 each row runs one sequential scan; else
// the scan walks n while updating `inner` running values at once (vectorised).
#include <stdexcept>
#include <vector>

#include "backend/common/scan_ops.h"
#include "backend/cpu/elementwise_loops.h"
#include "core/cast.h"
#include "primitives/scan.h"

namespace alloy {

namespace {

template <ScanOp Op, typename T>
void scan_kernel(const array& in_any, array& out, int axis, bool reverse, bool inclusive) {
  using Acc = scan_acc_t<Op, T>;
  const scan_fn_t<Op> fn;
  const Acc identity = scan_fn_t<Op>::template identity<Acc>();
  cpu::allocate_row_contiguous(out);
  if (out.size() == 0) return;
  array in = cpu::row_contiguous_copy(in_any);
  const T* x = in.data<T>();
  T* o = out.data<T>();
  int64_t outer = 1, n = in.shape(axis), inner = 1;
  for (int d = 0; d < axis; ++d) outer *= in.shape(d);
  for (int d = axis + 1; d < in.ndim(); ++d) inner *= in.shape(d);
  const int64_t step = reverse ? -inner : inner;
  if (inner == 1) {
    for (int64_t r = 0; r < outer; ++r) {
      const T* xs = x + r * n + (reverse ? n - 1 : 0);
      T* os = o + r * n + (reverse ? n - 1 : 0);
      Acc acc = identity;
      for (int64_t i = 0; i < n; ++i) {
        Acc v = cast_value<Acc>(xs[i * step]);
        if (inclusive) {
          acc = fn(acc, v);
          os[i * step] = cast_value<T>(acc);
        } else {
          os[i * step] = cast_value<T>(acc);
          acc = fn(acc, v);
        }
      }
    }
    return;
  }
  auto acc = cpu::filled<Acc>(inner, identity);
  for (int64_t r = 0; r < outer; ++r) {
    const int64_t first = r * n * inner + (reverse ? (n - 1) * inner : 0);
    for (int64_t j = 0; j < inner; ++j) acc[j] = identity;
    for (int64_t i = 0; i < n; ++i) {
      const T* xs = x + first + i * step;
      T* os = o + first + i * step;
      if (inclusive) {
        for (int64_t j = 0; j < inner; ++j) {
          acc[j] = fn(acc[j], cast_value<Acc>(xs[j]));
          os[j] = cast_value<T>(acc[j]);
        }
      } else {
        for (int64_t j = 0; j < inner; ++j) {
          os[j] = cast_value<T>(acc[j]);
          acc[j] = fn(acc[j], cast_value<Acc>(xs[j]));
        }
      }
    }
  }
}

}  // namespace

void Scan::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in = inputs[0];
  dispatch_scan_op(op_, [&](auto op_c) {
    constexpr ScanOp Op = decltype(op_c)::value;
    dispatch_dtype(in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (scan_legal<Op, T>) {
        scan_kernel<Op, T>(in, outputs[0], axis_, reverse_, inclusive_);
      } else {
        throw std::invalid_argument(std::string("[") + name() + "] not defined for dtype " +
                                    dtype_name(in.dtype()) + ".");
      }
    });
  });
}

}  // namespace alloy
