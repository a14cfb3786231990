// The CUDA kernel of a fused elementwise chain (mx.compile): one module per
// program, generated from its steps with the functors the unfused op kernels
// use, so the fused result is the unfused one bit for bit.
#pragma once

#include <string>
#include <vector>

#include "primitives/fused.h"

namespace alloy::cuda {

// How the kernel reads each primitive input: every element, or one value
// broadcast to all (a size-1 input).
enum class FusedRead : char { Dense = 'd', Scalar = 's' };

// The module cache key of a program (its steps and input reads).
std::string fused_family_key(const std::vector<FusedStep>& steps, const std::vector<FusedRead>& reads);

// Elements per thread iteration of the vector form: 16 bytes of the widest
// value the kernel reads or writes (1 for 16-byte types).
int fused_vector_width(const std::vector<FusedStep>& steps, const std::vector<FusedRead>& reads);

// The module holding kernel `name`: "fused_v" (aligned vector access) or
// "fused_1" (one element at a time). Its one parameter is the array of
// input pointers, then the output pointer, then the element count.
std::string fused_module_source(const std::vector<FusedStep>& steps, const std::vector<FusedRead>& reads,
                                const std::string& name);

// The module holding the row reduction kernel `name` ("row_block" or
// "row_warp" of device/reduce.cuh) that folds the chain's values by `op`
// with accumulator `acc` into `out` values: one pass, the Reduce kernel's
// order. Its first parameter is the kernel's Args (the output unused).
std::string fused_reduce_module_source(const std::vector<FusedStep>& steps, const std::vector<FusedRead>& reads,
                                       ReduceOp op, Dtype acc, Dtype out, const std::string& name);

}  // namespace alloy::cuda
