// Which Softmax/LogSumExp kernel (device/softmax.cuh) a row length takes:
// shared by the launch (backend/cuda/softmax.cpp) and the ahead-of-time set
// (aot_kernels.cpp), which builds every form the plan can pick.
#pragma once

#include <cstdint>

namespace alloy::cuda {

// Elements per thread held in registers, at most (rows of up to 32 * K go
// one per warp, up to 1024 * K one per block; longer ones loop).
inline constexpr int kRowSoftmaxMaxK = 32;

struct RowSoftmaxPlan {
  const char* kernel;   // "softmax_warp", "softmax_block" or "softmax_loop"
  int k;                // elements per thread in registers (0: the loop)
  unsigned threads;     // per block
  int rows_per_block;
};

RowSoftmaxPlan row_softmax_plan(int64_t n);

}  // namespace alloy::cuda
