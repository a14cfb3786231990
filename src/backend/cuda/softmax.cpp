// GPU evaluation of Softmax and LogSumExp over the last axis
// (device/softmax.cuh): rows held in registers by a warp or a block (one
// read, one write); longer softmax rows looped over, or split over several
// blocks each when few; longer logsumexp rows streamed (read once).
#include "backend/cuda/softmax.h"

#include <algorithm>
#include <stdexcept>

#include "backend/cuda/elementwise.h"
#include "backend/cuda/kernel_sources.h"
#include "backend/cuda/kernels.h"
#include "primitives/softmax.h"

namespace alloy {

using namespace cuda;

namespace cuda {

std::string RowSoftmaxPlan::variant() const {
  switch (form) {
    case RowSoftmaxForm::Registers: return std::to_string(group) + "x" + std::to_string(k) + (staged ? "s" : "");
    case RowSoftmaxForm::Loop: return "loop";
    case RowSoftmaxForm::Stream: return "stream";
    default: return "split";
  }
}

namespace {
// (threads per row, most elements per thread) of the register forms, in
// the order the plan tries them. Small groups with many elements each keep
// several rows in flight per SM (a block of 256 holding 64 floats a thread
// leaves room for three); only rows beyond 16384 take a whole 1024.
constexpr struct {
  int group, max_k;
} kGroups[] = {{32, 16}, {256, 64}, {1024, 32}};
}  // namespace

RowSoftmaxPlan row_softmax_plan(bool log_sum_exp, int64_t rows, int64_t n, int sm_count) {
  // Few rows split, at least 8192 elements a split: about four blocks per
  // SM in all (eight measured slower for the streamed logsumexp on an H200).
  const int64_t splits =
      rows >= 2 * sm_count ? 1 : std::max<int64_t>(1, std::min<int64_t>(n / 8192, 4 * sm_count / std::max<int64_t>(rows, 1)));
  // Logsumexp keeps no element, so it streams whatever would need a whole
  // block of 1024 in registers (one row per SM).
  const int64_t held = int64_t(kGroups[1].group) * kGroups[1].max_k;
  if (log_sum_exp && (n > held || splits > 1)) return {RowSoftmaxForm::Stream, 0, 0, splits};
  for (const auto& g : kGroups) {
    if (n > int64_t(g.group) * g.max_k) continue;
    int k = 1;
    while (int64_t(g.group) * k < n) k *= 2;
    return {RowSoftmaxForm::Registers, g.group, k};
  }
  if (splits == 1) return {RowSoftmaxForm::Loop};
  return {RowSoftmaxForm::Split, 0, 0, splits};
}

RowSoftmaxPlan staged_rows(const RowSoftmaxPlan& plan, bool log_sum_exp, int64_t n, int item_bytes,
                           int64_t shared_limit) {
  const int64_t bytes = n * item_bytes;
  if (log_sum_exp || plan.form != RowSoftmaxForm::Registers || plan.group < 256 || item_bytes > 4 || bytes % 16 != 0 ||
      bytes < 32 * 1024 || bytes > shared_limit)
    return plan;
  RowSoftmaxPlan staged = plan;
  staged.staged = true;
  return staged;
}

std::vector<RowSoftmaxPlan> row_softmax_forms(bool log_sum_exp, int item_bytes) {
  // The plan itself over every power-of-two row length up to the longest a
  // register form holds, then the forms of long rows, many and few.
  std::vector<RowSoftmaxPlan> forms;
  const int64_t longest = int64_t(kGroups[2].group) * kGroups[2].max_k;
  auto add = [&](const RowSoftmaxPlan& p) {
    for (const RowSoftmaxPlan& f : forms) {
      if (f.variant() == p.variant()) return;
    }
    forms.push_back(p);
  };
  for (int64_t n = 1; n <= longest; n *= 2) {
    const RowSoftmaxPlan plan = row_softmax_plan(log_sum_exp, 1 << 20, n, 1);
    add(plan);
    add(staged_rows(plan, log_sum_exp, n, item_bytes, int64_t(1) << 30));
  }
  add(row_softmax_plan(log_sum_exp, 1 << 20, 2 * longest, 1));
  add(row_softmax_plan(log_sum_exp, 1, 2 * longest, 1 << 10));
  return forms;
}

std::vector<std::string> row_softmax_kernels(const RowSoftmaxPlan& plan) {
  switch (plan.form) {
    case RowSoftmaxForm::Registers: return {plan.staged ? "softmax_staged" : "softmax_rows"};
    case RowSoftmaxForm::Loop: return {"softmax_loop"};
    case RowSoftmaxForm::Stream: return {"lse_stream", "lse_merge"};
    default: return {"split_max", "split_sum", "split_finish"};
  }
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
  int64_t n = in.shape().back();
  int64_t rows = static_cast<int64_t>(in.size()) / n;
  RowSoftmaxPlan plan = row_softmax_plan(log_sum_exp, rows, n, sm_count());
  const void* src = in.raw_data();
  void* dst = out.raw_data();
  if (((reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst)) % 16) == 0) {
    // Room for the staged row beside block_all's partials.
    static const int64_t shared_limit =
        cuda_driver::device_attribute(cuda_driver::kMaxSharedMemoryPerBlockOptin) - 1024;
    plan = staged_rows(plan, log_sum_exp, n, static_cast<int>(size_of(t)), shared_limit);
  }
  const std::string op_name = log_sum_exp ? "LogSumExp" : "Softmax";
  const std::string key = "softmax/" + op_name + "/" + dtype_name(t) + "/" + plan.variant();
  auto fn = [&](const std::string& name) {
    return kernel(key, name, [=](const std::string& k) { return row_softmax_source(op_name, t, plan, k); });
  };
  if (plan.staged) {
    // As many blocks as stay resident: each loops over rows, so its staging
    // of the next row overlaps its work on this one.
    const unsigned shared = static_cast<unsigned>(n * int64_t(size_of(t)));
    CUfunction f = fn("softmax_staged");
    const int64_t resident = int64_t(sm_count()) * cuda_driver::resident_blocks_per_sm(f, plan.group, shared);
    const unsigned grid = static_cast<unsigned>(std::max<int64_t>(1, std::min(rows, resident)));
    launch(f, grid, static_cast<unsigned>(plan.group), shared, s, src, dst, rows, n);
  } else if (plan.form == RowSoftmaxForm::Registers) {
    const int64_t per_block = plan.group == 32 ? 8 : 1;
    const unsigned threads = plan.group == 32 ? 256 : plan.group;
    const unsigned grid = static_cast<unsigned>(
        std::max<int64_t>(1, std::min<int64_t>((rows + per_block - 1) / per_block, int64_t(sm_count()) * 64)));
    launch(fn("softmax_rows"), grid, threads, 0, s, src, dst, rows, n);
  } else if (plan.form == RowSoftmaxForm::Stream) {
    int64_t splits = plan.splits;
    // Splits start on 16-byte chunks (lse_stream reads aligned rows by them).
    int64_t split_len = splits == 1 ? n : ((n + splits - 1) / splits + 15) / 16 * 16;
    splits = (n + split_len - 1) / split_len;  // none empty
    const Dtype acc = t == Dtype::float64 ? Dtype::float64 : Dtype::float32;
    array part_m = scratch(static_cast<size_t>(splits > 1 ? rows * splits : 0), acc);
    array part_s = scratch(static_cast<size_t>(splits > 1 ? rows * splits : 0), acc);
    void* pm = part_m.raw_data();
    void* ps = part_s.raw_data();
    const unsigned gx = static_cast<unsigned>(std::min<int64_t>(rows, int64_t(sm_count()) * 64));
    launch3(fn("lse_stream"), {gx, static_cast<unsigned>(splits), 1}, {256, 1, 1}, 0, s, src, dst, pm, ps, rows, n,
            split_len);
    if (splits > 1) launch(fn("lse_merge"), grid_blocks(rows * 32), kBlock, 0, s, pm, ps, dst, rows, splits);
  } else if (plan.form == RowSoftmaxForm::Loop) {
    const unsigned grid = static_cast<unsigned>(std::min<int64_t>(rows, int64_t(sm_count()) * 16));
    launch(fn("softmax_loop"), grid, 1024, 0, s, src, dst, rows, n);
  } else {
    int64_t splits = plan.splits;
    int64_t split_len = (n + splits - 1) / splits;
    splits = (n + split_len - 1) / split_len;  // none empty
    const Dtype acc = t == Dtype::float64 ? Dtype::float64 : Dtype::float32;
    array part_max = scratch(static_cast<size_t>(rows * splits), acc);
    array part_sum = scratch(static_cast<size_t>(rows * splits), acc);
    void* pm = part_max.raw_data();
    void* ps = part_sum.raw_data();
    const unsigned gx = static_cast<unsigned>(rows), gy = static_cast<unsigned>(splits);
    launch3(fn("split_max"), {gx, gy, 1}, {256, 1, 1}, 0, s, src, pm, rows, n, split_len);
    launch3(fn("split_sum"), {gx, gy, 1}, {256, 1, 1}, 0, s, src, pm, ps, rows, n, split_len);
    launch3(fn("split_finish"), {gx, gy, 1}, {256, 1, 1}, 0, s, src, pm, ps, dst, rows, n, split_len, splits);
  }
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
