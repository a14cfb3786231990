// Which Softmax/LogSumExp kernel (device/softmax.cuh) a row shape takes:
// shared by the launch (backend/cuda/softmax.cpp) and the ahead-of-time set
// (aot_kernels.cpp), which builds every form the plan can pick.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace alloy::cuda {

enum class RowSoftmaxForm { Registers, Loop, Split, Stream };

struct RowSoftmaxPlan {
  RowSoftmaxForm form;
  int group = 0;     // Registers: threads per row (32: a warp, 256, 1024)
  int k = 0;         // Registers: elements per thread
  int64_t splits = 1;  // Split, Stream: blocks per row
  // Registers, softmax: the block loops over rows, staging the next one in
  // shared memory (softmax_staged; rows of 16-byte chunks, see staged_rows).
  bool staged = false;
  // The module key's tail ("32x4", "1024x32s", "loop", "split", "stream").
  std::string variant() const;
};

// Softmax: rows in registers as long as a group of at most 1024 threads
// holds them; longer rows split over blocks when there are few of them, else
// loop. Logsumexp: the same register forms for many rows of up to 16384,
// longer rows (and few long rows) streamed.
RowSoftmaxPlan row_softmax_plan(bool log_sum_exp, int64_t rows, int64_t n, int sm_count);

// The staged form of a softmax (not logsumexp) register plan when it
// applies: rows of at least 32 KB (one or two of them fill an SM's
// registers) that are whole 16-byte chunks of elements of at most 4 bytes,
// and fit `shared_limit` bytes of shared memory per block. Otherwise the
// plan itself.
RowSoftmaxPlan staged_rows(const RowSoftmaxPlan& plan, bool log_sum_exp, int64_t n, int item_bytes,
                           int64_t shared_limit);

// Every plan the launch can make for elements of `item_bytes` (the AOT set
// builds each), and the kernels
// a plan launches.
std::vector<RowSoftmaxPlan> row_softmax_forms(bool log_sum_exp, int item_bytes);
std::vector<std::string> row_softmax_kernels(const RowSoftmaxPlan& plan);

}  // namespace alloy::cuda
