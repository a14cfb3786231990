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

std::shared_ptr<jit::CpuKernel> compiled_for(CustomKernel& k) {
  fast::KernelVariant& v = k.variant();
  std::lock_guard<std::mutex> lock(v.compile_mutex);
  if (v.binary) return std::static_pointer_cast<jit::CpuKernel>(v.binary);
  jit::CompileOptions opts;
  opts.math_mode = v.spec.math_mode;
  try {
    auto kernel = jit::compile_cpu(v.translated.source, opts);
    v.binary = kernel;
    return kernel;
  } catch (const jit::CompileError& e) {
    throw std::runtime_error("[metal_kernel] kernel '" + k.user_name() + "' failed to compile:\n" +
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
  auto kernel = compiled_for(*this);

  std::vector<array> inputs = inputs_in;
  if (ensure_row_contiguous()) {
    for (auto& in : inputs) {
      if (!in.flags().row_contiguous) {
        array c = contiguous(in, false, stream());
        c.eval();
        in = c;
      }
    }
  }
  for (auto& o : outputs) {
    cpu::allocate_row_contiguous(o);
    if (init_value()) fill(o, *init_value());
  }

  std::vector<void*> buffers;
  std::vector<const int*> shapes;
  std::vector<const int64_t*> strides;
  std::vector<int> ndims;
  for (auto& in : inputs) {
    buffers.push_back(in.raw_data());
    shapes.push_back(in.shape().data());
    strides.push_back(in.strides().data());
    ndims.push_back(in.ndim());
  }
  for (auto& o : outputs) buffers.push_back(o.raw_data());

  alloy_msl::cpu::Launch launch{};
  launch.buffers = buffers.data();
  launch.shapes = shapes.data();
  launch.strides = strides.data();
  launch.ndims = ndims.data();
  for (int i = 0; i < 3; ++i) {
    launch.grid[i] = grid()[i];
    launch.threadgroup[i] = threadgroup()[i];
  }
  try {
    kernel->launch(launch);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error("[metal_kernel] kernel '" + user_name() + "': " + e.what());
  }
}

}  // namespace alloy
