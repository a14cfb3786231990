// The Reduce kernels' launch logic (backend/cuda/reduce.cpp), open to other
// sources of values: a fused chain (backend/cuda/fused.cpp) reduces the
// values it computes with the same kernels, launch shapes and order, so its
// result is the unfused one bit for bit.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "alloy/array.h"
#include "backend/common/reduce_ops.h"
#include "backend/cuda/kernels.h"

namespace alloy::cuda {

// Where a reduction reads its values.
struct ReduceSource {
  Dtype dtype = Dtype::float32;  // the values' dtype
  const void* data = nullptr;    // the values in memory, row-contiguous; null when computed
  const void* param = nullptr;   // the first argument of the row kernels ("row_block", "row_warp")
  // The row kernel `name` writing `out` values (the output's dtype, or the
  // accumulator's for partials of a split row).
  std::function<CUfunction(const std::string& name, Dtype out)> row_kernel;
};

// The accumulator dtype of `op` over `in` values; an invalid_argument
// naming `op_name` when the op is not defined for `in`.
Dtype reduce_acc_dtype(ReduceOp op, Dtype in, const char* op_name);

// Reduces the values of `shape` over `axes` into `out` (allocated). A
// reduction whose last axis is kept reads `source.data`; one over the
// trailing axes only the row kernels. Scratch arrays the launches still use
// go to `keep_alive`.
void run_reduce(const std::string& op, const Shape& shape, const ReduceSource& source, array& out, Dtype acc_t,
                const std::vector<int>& axes, CUstream s, std::vector<array>& keep_alive);

}  // namespace alloy::cuda
