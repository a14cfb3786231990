// The CPU reduction order, shared by the Reduce kernel and compile's fused
// reductions so that both give the same bits: eight lanes, lane j taking the
// elements j, j + 8, ... of each full group of eight, the tail in lane 0,
// then the lanes folded in order. Values may arrive in pieces (fed in
// blocks); pieces other than the last must hold a multiple of eight.
#pragma once

#include <cstdint>

#include "backend/common/reduce_ops.h"
#include "core/cast.h"

namespace alloy::cpu {

template <ReduceOp Op, typename Acc>
class ReduceLanes {
 public:
  static constexpr int64_t kLanes = 8;

  ReduceLanes() {
    for (auto& l : lane_) l = reduce::Fn<Op>::template identity<Acc>();
  }
  template <typename T>
  __attribute__((always_inline)) void add(const T* p, int64_t n) {
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
      for (int64_t j = 0; j < kLanes; ++j) lane_[j] = fn_(lane_[j], cast_value<Acc>(p[i + j]));
    for (; i < n; ++i) lane_[0] = fn_(lane_[0], cast_value<Acc>(p[i]));
  }
  Acc result() const {
    Acc acc = lane_[0];
    for (int64_t j = 1; j < kLanes; ++j) acc = fn_(acc, lane_[j]);
    return acc;
  }

 private:
  reduce::Fn<Op> fn_;
  Acc lane_[kLanes];
};

}  // namespace alloy::cpu
