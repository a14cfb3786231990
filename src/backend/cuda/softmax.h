// Which Softmax/LogSumExp kernel (device/softmax.cuh) a row shape takes:
// shared by the launch (backend/cuda/softmax.cpp) and the ahead-of-time set
// (aot_kernels.cpp), which builds every form the plan can pick.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace alloy::cuda {

enum class RowSoftmaxForm { Registers, Loop, Split };

struct RowSoftmaxPlan {
  RowSoftmaxForm form;
  int group = 0;     // Registers: threads per row (32: a warp, 256, 1024)
  int k = 0;         // Registers: elements per thread
  int64_t splits = 1;  // Split: blocks per row
  // The module key's tail ("32x4", "loop", "split") and its kernels.
  std::string variant() const;
};

// Rows in registers as long as a group of at most 1024 threads holds them
// with at most 32 elements each; longer rows split when there are few of
// them, else loop.
RowSoftmaxPlan row_softmax_plan(int64_t rows, int64_t n, int sm_count);

// Every plan the launch can make (the AOT set builds each), and the kernels
// a plan launches.
std::vector<RowSoftmaxPlan> row_softmax_forms();
std::vector<std::string> row_softmax_kernels(const RowSoftmaxPlan& plan);

}  // namespace alloy::cuda
