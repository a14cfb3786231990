// GPU evaluation of Softmax and LogSumExp over the last axis
// (device/softmax.cuh). Rows of up to 1024 elements go one per warp, rows of
// up to 32768 one per block of 1024 threads, both held in registers (one
// read, one write); longer rows loop over memory.
#include <algorithm>
#include <stdexcept>

#include "backend/cuda/elementwise.h"
#include "backend/cuda/kernel_sources.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda/softmax.h"
#include "primitives/softmax.h"

namespace alloy {

using namespace cuda;

namespace cuda {

RowSoftmaxPlan row_softmax_plan(int64_t n) {
  auto pow2_at_least = [](int64_t v) {
    int k = 1;
    while (k < v) k *= 2;
    return k;
  };
  if (n <= 32 * kRowSoftmaxMaxK) return {"softmax_warp", std::max(1, pow2_at_least((n + 31) / 32)), 256, 8};
  if (n <= 1024 * kRowSoftmaxMaxK) return {"softmax_block", std::max(2, pow2_at_least((n + 1023) / 1024)), 1024, 1};
  return {"softmax_loop", 0, 1024, 1};
}

}  // namespace cuda

namespace {

void eval_rows(bool log_sum_exp, const array& in_any, array& out, const Stream& stream, const char* op) {
  const Dtype t = in_any.dtype();
  if (!is_floating(t)) {
    throw std::invalid_argument(std::string("[") + op + "] needs a real floating-point input, got " +
                                dtype_name(t) + ".");
  }
  allocate_row_contiguous(out);
  if (out.size() == 0) return;
  CUstream s = stream_for(stream);
  array in = row_contiguous(in_any, s, op);
  const int64_t n = in.shape().back();
  const int64_t rows = static_cast<int64_t>(in.size()) / n;
  const RowSoftmaxPlan plan = row_softmax_plan(n);
  const std::string op_name = log_sum_exp ? "LogSumExp" : "Softmax";
  const std::string key = "softmax/" + op_name + "/" + dtype_name(t) + "/" + std::to_string(plan.k);
  CUfunction fn = kernel(key, plan.kernel,
                         [=](const std::string& k) { return row_softmax_source(op_name, t, plan.k, k); });
  const int64_t blocks = std::min<int64_t>((rows + plan.rows_per_block - 1) / plan.rows_per_block,
                                           int64_t(sm_count()) * (plan.threads == 1024 ? 2 : 16));
  const unsigned grid = static_cast<unsigned>(std::max<int64_t>(blocks, 1));
  const void* src = in.raw_data();
  void* dst = out.raw_data();
  int64_t n_rows = rows, len = n;
  launch(fn, grid, plan.threads, 0, s, src, dst, n_rows, len);
  note_pending(stream);
}

}  // namespace

void Softmax::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  eval_rows(false, inputs[0], outputs[0], stream(), name());
}

void LogSumExp::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  eval_rows(true, inputs[0], outputs[0], stream(), name());
}

}  // namespace alloy
