// Running a custom kernel's C++ translation on raw buffers: Alloy's own
// CustomKernel node and the MLX plugin's primitive (plugin/mlx) share it.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "alloy/dtype.h"
#include "fast/kernel_cache.h"
#include "fast/prepared_launch.h"
#include "msl/runtime/cuda_launch.h"

namespace alloy::cpu {

// A launch's operands, in the kernel's parameter order: every input, then
// every output (buffers), with each one's shape, strides and ndim (an
// output's where given: metal_library's tensor parameters read them). Shapes
// and strides hold kMaxKernelDims entries, zeros past ndim, as the CUDA
// launch's ShapeArg/StridesArg do: a body that reads past ndim (Metal leaves
// it undefined) gets 0 on either device.
struct KernelOperands {
  void* const* buffers;
  const int* const* shapes;
  const int64_t* const* strides;
  const int* ndims;
  const unsigned long long* elements;  // per buffer: what a bounds-checked kernel may index
};

// The tables behind KernelOperands, on the stack for the usual handful of
// buffers. Filled from any array type (Alloy's, MLX's); shapes and strides
// are copied into zero-padded rows (an array's own vectors end at ndim).
class OperandTables {
 public:
  OperandTables(size_t n_inputs, size_t n_outputs);
  OperandTables(const OperandTables&) = delete;
  OperandTables& operator=(const OperandTables&) = delete;
  // `elements`: how many elements the buffer holds from `data` on (a
  // bounds-checked kernel's limit; kUnknownElements checks nothing).
  static constexpr unsigned long long kUnknownElements = ~0ull;
  void set_input(size_t i, void* data, const int* shape, const int64_t* strides, int ndim,
                 unsigned long long elements = kUnknownElements) {
    buffers_[i] = data;
    ndims_[i] = ndim;
    elements_[i] = elements;
    keep_layout(i, shape, strides, ndim);
  }
  void set_output(size_t i, void* data, unsigned long long elements = kUnknownElements, const int* shape = nullptr,
                  const int64_t* strides = nullptr, int ndim = 0) {
    buffers_[n_inputs_ + i] = data;
    elements_[n_inputs_ + i] = elements;
    ndims_[n_inputs_ + i] = ndim;
    keep_layout(n_inputs_ + i, shape, strides, ndim);
  }
  KernelOperands view() const { return {buffers_, shapes_, strides_, ndims_, elements_}; }

 private:
  static constexpr size_t kInline = 16;
  static constexpr int kDims = alloy_msl::cuda::kMaxKernelDims;
  // Slot i's shape and strides as padded rows (an operand of more
  // dimensions, which the GPU refuses, keeps its own vectors).
  void keep_layout(size_t i, const int* shape, const int64_t* strides, int ndim) {
    shapes_[i] = shape;
    strides_[i] = strides;
    if (ndim < 0 || ndim > kDims) return;
    if (shape) {
      int* row = shape_rows_ + i * kDims;
      std::fill(std::copy(shape, shape + ndim, row), row + kDims, 0);
      shapes_[i] = row;
    }
    if (strides) {
      int64_t* row = stride_rows_ + i * kDims;
      std::fill(std::copy(strides, strides + ndim, row), row + kDims, int64_t{0});
      strides_[i] = row;
    }
  }
  size_t n_inputs_;
  void* buffers_inline_[kInline];
  const int* shapes_inline_[kInline];
  const int64_t* strides_inline_[kInline];
  int ndims_inline_[kInline];
  unsigned long long elements_inline_[kInline];
  int shape_rows_inline_[kInline * kDims];
  int64_t stride_rows_inline_[kInline * kDims];
  std::vector<void*> buffers_heap_;
  std::vector<const int*> shapes_heap_;
  std::vector<const int64_t*> strides_heap_;
  std::vector<int> ndims_heap_;
  std::vector<unsigned long long> elements_heap_;
  std::vector<int> shape_rows_heap_;
  std::vector<int64_t> stride_rows_heap_;
  void** buffers_ = buffers_inline_;
  const int** shapes_ = shapes_inline_;
  const int64_t** strides_ = strides_inline_;
  int* ndims_ = ndims_inline_;
  unsigned long long* elements_ = elements_inline_;
  int* shape_rows_ = shape_rows_inline_;
  int64_t* stride_rows_ = stride_rows_inline_;
};

// Compiles the variant's translation unless done before (the content-
// addressed cache underneath); a compile error names the kernel and quotes
// the user's lines. run_custom_kernel calls it too; callers that run the
// kernel on another thread call it first, so errors surface at the call.
void compile_custom_kernel(fast::KernelVariant& v);

// Compiles the variant's translation on first use (the content-addressed
// cache underneath), then runs the whole grid over the thread pool. Errors
// name the kernel.
// A `timeout` > 0 stops the launch after that many seconds (KernelTimeout).
// `restart`, when given, sets the outputs up as before the launch (their
// init_value, their copies of inputs): a metal_kernel launch stopped by a
// memory fault is then rerun bounds-checked, which names the access, or,
// when it was only a read of an input out of bounds, runs it to its end
// (such reads give element 0, with a warning; docs/design/faults.md).
void run_custom_kernel(fast::KernelVariant& v, const KernelOperands& operands, const std::array<unsigned, 3>& grid,
                       const std::array<unsigned, 3>& threadgroup, double timeout = 0,
                       const std::function<void()>& restart = {});

// A prepared launch on raw host buffers (the host API's command encoder,
// alloy/metal.h): inputs then outputs in the glue's order.
void run_encoded(const fast::PreparedLaunch& p, const std::vector<void*>& inputs, const std::vector<void*>& outputs);

// Sets n elements of dtype d at p to `value` (a kernel's init_value).
void fill_elements(void* p, size_t n, Dtype d, double value);

// Canary bytes after the small outputs of an unchecked kernel, so a write
// just past one raises instead of corrupting other memory (docs/design/
// faults.md). output_tail_bytes: the bytes to allocate after an output of
// `nbytes` (0: none); fill_output_tail writes them after allocation;
// check_output_tails throws a runtime_error naming the kernel and the first
// output whose tail the launch changed. `outputs`: (data, elements, bytes).
struct OutputBuffer {
  void* data;
  size_t elements, nbytes;
};
size_t output_tail_bytes(size_t nbytes, const fast::KernelVariant& v);
void fill_output_tail(const OutputBuffer& out, const fast::KernelVariant& v);
void check_output_tails(const std::vector<OutputBuffer>& outputs, const fast::KernelVariant& v);

}  // namespace alloy::cpu
