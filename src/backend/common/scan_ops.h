// Scans combine like reductions (running sum, product, max, min) or by
// log-add-exp (logcumsumexp); the ops cast bool inputs of cumsum/cumprod to
// int32 and non-float inputs of logcumsumexp to float32 first, so a scan's
// output dtype is always its input dtype.
#pragma once

#include "backend/common/binary_ops.h"
#include "backend/common/reduce_ops.h"

namespace alloy {

enum class ScanOp : uint8_t { Sum, Prod, Max, Min, LogAddExp };

inline constexpr const char* kScanOpNames[] = {"cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"};

constexpr ReduceOp scan_combiner(ScanOp op) {
  switch (op) {
    case ScanOp::Sum: return ReduceOp::Sum;
    case ScanOp::Prod: return ReduceOp::Prod;
    case ScanOp::Max: return ReduceOp::Max;
    case ScanOp::Min: return ReduceOp::Min;
    case ScanOp::LogAddExp: return ReduceOp::Max;  // unused: scan_fn and scan_legal treat it apart
  }
  return ReduceOp::Sum;
}

namespace scan {
// logaddexp's combine (binary_ops.h); -inf (an empty sum) is its identity.
struct LogAddExp : binary::Fn<BinaryOp::LogAddExp> {
  template <typename A>
  ALLOY_HD static A identity() { return -math::inf<A>(); }
};
}  // namespace scan

// The combiner a scan runs: a reduction's, or log-add-exp.
template <ScanOp Op>
struct scan_fn {
  using type = reduce::Fn<scan_combiner(Op)>;
};
template <>
struct scan_fn<ScanOp::LogAddExp> {
  using type = scan::LogAddExp;
};
template <ScanOp Op>
using scan_fn_t = typename scan_fn<Op>::type;

template <ScanOp Op, typename T>
inline constexpr bool scan_legal =
    Op == ScanOp::LogAddExp
        ? (math::kind_bit<T>() & (math::kFloat | math::kComplex)) != 0
        : reduce_legal<scan_combiner(Op), T> && !(std::is_same_v<T, bool> && (Op == ScanOp::Sum || Op == ScanOp::Prod));

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
    case ScanOp::LogAddExp: return f(std::integral_constant<ScanOp, ScanOp::LogAddExp>{});
  }
  return f(std::integral_constant<ScanOp, ScanOp::Sum>{});
}

}  // namespace alloy
