// metal_kernel on the CPU: compile the C++ translation once per variant
// (content-addressed cache underneath), then run every threadgroup on the
// thread pool through the JIT executor.
#include <cstring>
#include <mutex>
#include <stdexcept>

#include "alloy/ops.h"
#include "backend/cpu/strided.h"
#include "jit/cpu_kernel.h"
#include "primitives/custom_kernel.h"

namespace alloy {

namespace {

// The variant's compiled kernel; it lives as long as the variant.
const jit::CpuKernel* compiled_for(CustomKernel& k) {
  fast::KernelVariant& v = k.variant();
  if (void* ready = v.ready.load(std::memory_order_acquire)) return static_cast<const jit::CpuKernel*>(ready);
  std::lock_guard<std::mutex> lock(v.compile_mutex);
  if (v.binary) return static_cast<const jit::CpuKernel*>(v.binary.get());
  jit::CompileOptions opts;
  opts.math_mode = v.spec.math_mode;
  try {
    auto kernel = jit::compile_cpu(v.translated.source, opts);
    v.binary = kernel;
    v.ready.store(kernel.get(), std::memory_order_release);
    return kernel.get();
  } catch (const jit::CompileError& e) {
    throw std::runtime_error(k.label() + " failed to compile:\n" +
                             msl::map_diagnostics(v.translated, e.log(), v.spec));
  }
}

void fill(array& out, double value) {
  std::vector<char> one(out.itemsize());
  convert_scalar(&value, Dtype::float64, one.data(), out.dtype());
  char* p = static_cast<char*>(out.raw_data());
  const size_t n = out.size(), w = one.size();
  if (value == 0.0) {
    std::memset(p, 0, out.nbytes());
    return;
  }
  for (size_t i = 0; i < n; ++i) std::memcpy(p + i * w, one.data(), w);
}

}  // namespace

void CustomKernel::eval_cpu(const std::vector<array>& inputs_in, std::vector<array>& outputs) {
  const jit::CpuKernel* kernel = compiled_for(*this);

  // Copies of the inputs only when one must be made row-contiguous.
  const std::vector<array>* inputs_p = &inputs_in;
  std::vector<array> copied;
  if (ensure_row_contiguous()) {
    for (size_t i = 0; i < inputs_in.size(); ++i) {
      if (inputs_in[i].flags().row_contiguous) continue;
      if (copied.empty()) copied = inputs_in;
      array c = contiguous(inputs_in[i], false, stream());
      c.eval();
      copied[i] = c;
    }
    if (!copied.empty()) inputs_p = &copied;
  }
  const std::vector<array>& inputs = *inputs_p;
  for (auto& o : outputs) {
    cpu::allocate_row_contiguous(o);
    if (init_value()) fill(o, *init_value());
  }

  // Launch tables: on the stack for the usual handful of buffers.
  const size_t n_in = inputs.size(), n_buf = n_in + outputs.size();
  constexpr size_t kInline = 16;
  void* buffers_inline[kInline];
  const int* shapes_inline[kInline];
  const int64_t* strides_inline[kInline];
  int ndims_inline[kInline];
  std::vector<void*> buffers_heap;
  std::vector<const int*> shapes_heap;
  std::vector<const int64_t*> strides_heap;
  std::vector<int> ndims_heap;
  void** buffers = buffers_inline;
  const int** shapes = shapes_inline;
  const int64_t** strides = strides_inline;
  int* ndims = ndims_inline;
  if (n_buf > kInline) {
    buffers_heap.resize(n_buf);
    shapes_heap.resize(n_in);
    strides_heap.resize(n_in);
    ndims_heap.resize(n_in);
    buffers = buffers_heap.data();
    shapes = shapes_heap.data();
    strides = strides_heap.data();
    ndims = ndims_heap.data();
  }
  for (size_t i = 0; i < n_in; ++i) {
    buffers[i] = inputs[i].raw_data();
    shapes[i] = inputs[i].shape().data();
    strides[i] = inputs[i].strides().data();
    ndims[i] = inputs[i].ndim();
  }
  for (size_t i = 0; i < outputs.size(); ++i) buffers[n_in + i] = outputs[i].raw_data();

  alloy_msl::cpu::Launch launch{};
  launch.buffers = buffers;
  launch.shapes = shapes;
  launch.strides = strides;
  launch.ndims = ndims;
  for (int i = 0; i < 3; ++i) {
    launch.grid[i] = grid()[i];
    launch.threadgroup[i] = threadgroup()[i];
  }
  try {
    kernel->launch(launch);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(label() + ": " + e.what());
  }
}

}  // namespace alloy
