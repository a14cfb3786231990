// Scans combine like reductions (running sum, product, max, min); the op
// casts bool inputs of cumsum/cumprod to int32 first, so a scan's output dtype
// is always its input dtype.
#pragma once

#include "backend/common/reduce_ops.h"

namespace alloy {

enum class ScanOp : uint8_t { Sum, Prod, Max, Min };

inline constexpr const char* kScanOpNames[] = {"cumsum", "cumprod", "cummax", "cummin"};

constexpr ReduceOp scan_combiner(ScanOp op) {
  switch (op) {
    case ScanOp::Sum: return ReduceOp::Sum;
    case ScanOp::Prod: return ReduceOp::Prod;
    case ScanOp::Max: return ReduceOp::Max;
    case ScanOp::Min: return ReduceOp::Min;
  }
  return ReduceOp::Sum;
}

template <ScanOp Op, typename T>
inline constexpr bool scan_legal =
    reduce_legal<scan_combiner(Op), T> && !(std::is_same_v<T, bool> && (Op == ScanOp::Sum || Op == ScanOp::Prod));

// Running sums/products of integers wrap (through unsigned); max/min compare
// in the type itself; 16-bit floats accumulate in float.
template <ScanOp Op, typename T>
using scan_acc_t = std::conditional_t<Op == ScanOp::Sum || Op == ScanOp::Prod, math::wrap_t<math::compute_t<T>>,
                                      math::compute_t<T>>;

template <typename F>
decltype(auto) dispatch_scan_op(ScanOp op, F&& f) {
  switch (op) {
    case ScanOp::Sum: return f(std::integral_constant<ScanOp, ScanOp::Sum>{});
    case ScanOp::Prod: return f(std::integral_constant<ScanOp, ScanOp::Prod>{});
    case ScanOp::Max: return f(std::integral_constant<ScanOp, ScanOp::Max>{});
    case ScanOp::Min: return f(std::integral_constant<ScanOp, ScanOp::Min>{});
  }
  return f(std::integral_constant<ScanOp, ScanOp::Sum>{});
}

}  // namespace alloy
