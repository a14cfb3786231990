// A custom kernel's CUDA launch, prepared on raw device pointers: Alloy's own
// CustomKernel node launches it on an Alloy stream; the MLX plugin
// (plugin/mlx) adds it to MLX's command encoder.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "alloy/dtype.h"
#include "backend/cuda/device.h"
#include "fast/cuda_plan.h"
#include "fast/prepared_launch.h"
#include "msl/runtime/bounds_report.h"
#include "msl/runtime/cuda_launch.h"

namespace alloy::cuda {

using cuda_driver::CUfunction;

// Storage for kernel arguments: inline for the usual handful, else the heap.
template <class T, size_t N>
class ArgBuffer {
 public:
  ArgBuffer() = default;
  ArgBuffer(const ArgBuffer&) = delete;
  ArgBuffer& operator=(const ArgBuffer&) = delete;
  void resize(size_t n) {
    if (n > N) {
      heap_.resize(n);
      p_ = heap_.data();
    }
  }
  T& operator[](size_t i) { return p_[i]; }
  T* data() { return p_; }

 private:
  T inline_[N];
  std::vector<T> heap_;
  T* p_ = inline_;
};

struct KernelInput {
  const void* data;  // device pointer
  const int32_t* shape;
  const int64_t* strides;
  int ndim;
  unsigned long long elements = ~0ull;  // reachable from data (a bounds-checked kernel's limit)
};

// The function, geometry and arguments of one launch. `args()` points into
// this object, so it stays where it was built until the launch is issued.
// Compiles (NVRTC, cache underneath) and loads the variant on first use.
// Errors (too many dimensions, too much shared memory, a grid CUDA cannot
// run) name the kernel.
class CustomKernelLaunch {
 public:
  // `output_elements`: each output's elements (a bounds-checked kernel's
  // limit; null when not known, then unchecked). `output_views`: the
  // outputs' shapes and strides, for a kernel that takes them (a
  // metal_library tensor output); null when none does.
  CustomKernelLaunch(const fast::PreparedLaunch& p, const KernelInput* inputs, size_t n_inputs,
                     void* const* outputs, size_t n_outputs, const unsigned long long* output_elements = nullptr,
                     const KernelInput* output_views = nullptr);
  CustomKernelLaunch(const CustomKernelLaunch&) = delete;
  CustomKernelLaunch& operator=(const CustomKernelLaunch&) = delete;

  CUfunction function = nullptr;
  unsigned blocks[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned shared_bytes = 0;  // dynamic shared memory (the function allows it: see prepare_shared_memory)
  void** args() { return args_.data(); }
  // A bounds-checked kernel, after its launch on `s`: waits for it and
  // throws the fault it recorded, if any (fast/bounds_check.h). Otherwise
  // nothing.
  void check_bounds(CUstream s) const;
  bool bounds_checked() const { return bounds_report_ != nullptr; }
  cuda_driver::CUdeviceptr bounds_report() const { return reinterpret_cast<cuda_driver::CUdeviceptr>(bounds_report_); }

 private:
  fast::KernelVariant* variant_ = nullptr;
  alloy_msl::BoundsSizes bounds_sizes_;
  alloy_msl::BoundsReport* bounds_report_ = nullptr;  // device memory of this thread
  ArgBuffer<uint64_t, 16> slots_;
  ArgBuffer<void*, 16> args_;
  ArgBuffer<alloy_msl::cuda::ShapeArg, 2> shapes_;
  ArgBuffer<alloy_msl::cuda::StridesArg, 2> strides_;
  alloy_msl::cuda::Dispatch dispatch_{};
};

// The variant's launch plan: the one found on disk at lookup, else built
// from its translation with NVRTC (and stored for later processes).
std::shared_ptr<const fast::CudaLaunchPlan> launch_plan(fast::KernelVariant& v);

// A kernel's init_value: fills n elements of `width` bytes at `data` with the
// bit pattern `bits` (the value already in the output dtype).
struct FillLaunch {
  FillLaunch(void* data, size_t n, unsigned width, uint64_t bits);
  FillLaunch(const FillLaunch&) = delete;
  FillLaunch& operator=(const FillLaunch&) = delete;
  CUfunction function = nullptr;
  unsigned blocks = 1, block = 1;
  void** args() { return args_; }

 private:
  uint64_t data_, n_, bits_;
  unsigned width_;
  void* args_[4];
};

// A prepared launch on raw device buffers, issued on stream `s` (the host
// API's command encoder, alloy/metal.h): inputs then outputs in the glue's order.
void run_encoded(const fast::PreparedLaunch& p, const std::vector<void*>& inputs, const std::vector<void*>& outputs,
                 const Stream& s);

// The bit pattern of `value` in dtype d (at most 8 bytes), for FillLaunch.
uint64_t fill_bits(double value, Dtype d);

}  // namespace alloy::cuda
