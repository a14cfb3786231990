// Reduction functors (identity + combine) and the dtype rules of the reduce
// family: which inputs each op accepts, the accumulator and output types.
// Scans reuse the same combiners (scan_ops.h).
#pragma once

#include "backend/common/math_shim.h"

namespace alloy {

#define ALLOY_REDUCE_TABLE(X)                 \
  X(Sum, math::kAny)                          \
  X(Prod, math::kAny)                         \
  X(Max, math::kAny)                          \
  X(Min, math::kAny)                          \
  X(And, math::kAny)                          \
  X(Or, math::kAny)

enum class ReduceOp : uint8_t {
#define ALLOY_REDUCE_ENUM(name, kinds) name,
  ALLOY_REDUCE_TABLE(ALLOY_REDUCE_ENUM)
#undef ALLOY_REDUCE_ENUM
};

struct ReduceOpInfo {
  const char* name;
  unsigned kinds;
};
inline constexpr ReduceOpInfo kReduceOps[] = {
#define ALLOY_REDUCE_ROW(name, kinds) {#name, kinds},
    ALLOY_REDUCE_TABLE(ALLOY_REDUCE_ROW)
#undef ALLOY_REDUCE_ROW
};
constexpr const ReduceOpInfo& reduce_info(ReduceOp op) { return kReduceOps[static_cast<int>(op)]; }

template <ReduceOp Op, typename T>
inline constexpr bool reduce_legal = (reduce_info(Op).kinds & math::kind_bit<T>()) != 0;

// MLX's output dtypes: sums and products of small integers widen to 32 bits
// (bool counts as int32), all/any give bool, max/min keep the input dtype.
template <ReduceOp Op, typename T>
struct reduce_out {
  static constexpr bool arith = Op == ReduceOp::Sum || Op == ReduceOp::Prod;
  using type = std::conditional_t<
      Op == ReduceOp::And || Op == ReduceOp::Or, bool,
      std::conditional_t<!arith || !(std::is_integral_v<T>), T,
                         std::conditional_t<std::is_same_v<T, bool>, int32_t,
                                            std::conditional_t<(sizeof(T) >= 8), T,
                                                               std::conditional_t<std::is_signed_v<T>, int32_t,
                                                                                  uint32_t>>>>>;
};
template <ReduceOp Op, typename T>
using reduce_out_t = typename reduce_out<Op, T>::type;

// What the kernel accumulates in: integer sums/products in the (wrapping,
// unsigned) output width,
// 16-bit floats in float, the rest in themselves.
template <ReduceOp Op, typename T>
using reduce_acc_t =
    std::conditional_t<Op == ReduceOp::And || Op == ReduceOp::Or, bool,
                       std::conditional_t<Op == ReduceOp::Sum || Op == ReduceOp::Prod,
                                          math::wrap_t<math::compute_t<reduce_out_t<Op, T>>>,
                                          math::compute_t<reduce_out_t<Op, T>>>>;

namespace reduce {

template <ReduceOp Op>
struct Fn;

template <>
struct Fn<ReduceOp::Sum> {
  template <typename A>
  ALLOY_HD static constexpr A identity() { return A(0); }
  template <typename A>
  ALLOY_HD A operator()(A acc, A x) const { return A(acc + x); }
};
template <>
struct Fn<ReduceOp::Prod> {
  template <typename A>
  ALLOY_HD static constexpr A identity() { return A(1); }
  template <typename A>
  ALLOY_HD A operator()(A acc, A x) const { return A(acc * x); }
};
// NaN wins, as numpy's max/min.
template <>
struct Fn<ReduceOp::Max> {
  template <typename A>
  ALLOY_HD static constexpr A identity() { return math::lowest<A>(); }
  template <typename A>
  ALLOY_HD A operator()(A acc, A x) const {
    return (math::greater(x, acc) || math::isnan(x)) && !math::isnan(acc) ? x : acc;
  }
};
template <>
struct Fn<ReduceOp::Min> {
  template <typename A>
  ALLOY_HD static constexpr A identity() { return math::highest<A>(); }
  template <typename A>
  ALLOY_HD A operator()(A acc, A x) const {
    return (math::less(x, acc) || math::isnan(x)) && !math::isnan(acc) ? x : acc;
  }
};
template <>
struct Fn<ReduceOp::And> {
  template <typename A>
  ALLOY_HD static constexpr A identity() { return true; }
  template <typename A>
  ALLOY_HD A operator()(A acc, A x) const { return acc && x; }
};
template <>
struct Fn<ReduceOp::Or> {
  template <typename A>
  ALLOY_HD static constexpr A identity() { return false; }
  template <typename A>
  ALLOY_HD A operator()(A acc, A x) const { return acc || x; }
};

}  // namespace reduce

template <typename F>
decltype(auto) dispatch_reduce_op(ReduceOp op, F&& f) {
  switch (op) {
#define ALLOY_REDUCE_CASE(name, kinds) \
  case ReduceOp::name:                 \
    return f(std::integral_constant<ReduceOp, ReduceOp::name>{});
    ALLOY_REDUCE_TABLE(ALLOY_REDUCE_CASE)
#undef ALLOY_REDUCE_CASE
  }
  return f(std::integral_constant<ReduceOp, ReduceOp::Sum>{});  // unreachable
}

// Arg reductions: index of the first max/min (the first NaN if any, as numpy).
enum class ArgReduceOp : uint8_t { ArgMax, ArgMin };

namespace reduce {
template <ArgReduceOp Op>
struct ArgBetter {
  // Whether x should replace the current best.
  template <typename A>
  ALLOY_HD bool operator()(A x, A best) const {
    if (math::isnan(best)) return false;
    if (math::isnan(x)) return true;
    if constexpr (Op == ArgReduceOp::ArgMax) return math::greater(x, best);
    else return math::less(x, best);
  }
};
}  // namespace reduce

}  // namespace alloy
