// GPU evaluation of the creation primitives (device/creation.cuh).
#include "backend/cuda/kernel_sources.h"
#include "backend/cuda/kernels.h"
#include "primitives/creation.h"

namespace alloy {

using namespace cuda;

namespace {

CUfunction creation_kernel(Dtype t, const std::string& name) {
  return kernel(std::string("creation/") + dtype_name(t), name,
                [t](const std::string& k) { return creation_source(t, k); });
}

}  // namespace

void Arange::eval_gpu(const std::vector<array>&, std::vector<array>& outputs) {
  array& out = outputs[0];
  allocate_row_contiguous(out);
  int64_t n = static_cast<int64_t>(out.size());
  if (n == 0) return;
  void* p = out.raw_data();
  double start = start_, step = step_;
  launch(creation_kernel(out.dtype(), "arange"), grid_blocks(n), kBlock, 0, stream_for(stream()), p, start, step, n);
  note_pending(stream());
}

void Linspace::eval_gpu(const std::vector<array>&, std::vector<array>& outputs) {
  array& out = outputs[0];
  allocate_row_contiguous(out);
  int64_t n = static_cast<int64_t>(out.size());
  if (n == 0) return;
  void* p = out.raw_data();
  double start = start_, stop = stop_;
  double step = n > 1 ? (stop_ - start_) / static_cast<double>(n - 1) : 0.0;
  launch(creation_kernel(out.dtype(), "linspace"), grid_blocks(n), kBlock, 0, stream_for(stream()), p, start, step,
         stop, n);
  note_pending(stream());
}

void Eye::eval_gpu(const std::vector<array>&, std::vector<array>& outputs) {
  array& out = outputs[0];
  allocate_row_contiguous(out);
  int64_t n = static_cast<int64_t>(out.size());
  if (n == 0) return;
  void* p = out.raw_data();
  int64_t cols = out.shape(1), k = k_;
  launch(creation_kernel(out.dtype(), "eye"), grid_blocks(n), kBlock, 0, stream_for(stream()), p, cols, k, n);
  note_pending(stream());
}

}  // namespace alloy
