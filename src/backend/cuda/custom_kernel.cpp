// metal_kernel on the GPU: compile the CUDA translation with NVRTC once per
// variant, then launch it with dispatchThreads semantics (a 1-D block of
// prod(threadgroup) threads; the runtime derives Metal's ids inside).
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "alloy/allocator.h"
#include "alloy/ops.h"
#include "backend/cuda/device.h"
#include "backend/cuda/elementwise.h"
#include "core/streams.h"
#include "jit/cuda_compile.h"
#include "msl/runtime/cuda_launch.h"
#include "primitives/custom_kernel.h"

namespace alloy {

namespace {

struct CudaBinary {
  cuda_driver::Module module;
  cuda_driver::CUfunction fn = nullptr;
};

// The variant's loaded kernel; it lives as long as the variant. After the
// first launch this is one acquire load (KernelVariant::ready).
const CudaBinary* compiled_for(CustomKernel& k) {
  fast::KernelVariant& v = k.variant();
  if (void* ready = v.ready.load(std::memory_order_acquire)) return static_cast<const CudaBinary*>(ready);
  std::lock_guard<std::mutex> lock(v.compile_mutex);
  if (v.binary) return static_cast<const CudaBinary*>(v.binary.get());
  jit::NvrtcOptions opts;
  opts.arch = cuda::device_arch();
  opts.math_mode = v.spec.math_mode;
  jit::Cache::Bytes cubin;
  try {
    cubin = jit::compile_cuda(v.translated.source, v.translated.lines.generated_file, opts);
  } catch (const jit::CompileError& e) {
    throw std::runtime_error("[metal_kernel] kernel '" + k.user_name() + "' failed to compile for CUDA:\n" +
                             msl::map_diagnostics(v.translated, e.log(), v.spec));
  }
  cuda::ensure_context();
  auto bin = std::make_shared<CudaBinary>();
  bin->module = cuda_driver::Module(cubin->data());
  bin->fn = bin->module.function(v.translated.entry.c_str());
  v.binary = bin;
  v.ready.store(bin.get(), std::memory_order_release);
  return bin.get();
}

// The CUDA stream behind an Alloy stream, remembered per thread: the
// backend's map (behind a mutex) never drops a stream, so a thread that
// looked one up (and so made the context current) can keep it.
cuda::CUstream cached_stream(const Stream& s) {
  thread_local int index = -1;
  thread_local cuda::CUstream cs = nullptr;
  if (s.index != index) {
    cs = cuda::stream_for(s);
    index = s.index;
  }
  return cs;
}

// Storage for kernel arguments: inline for the usual handful, else the heap.
template <class T, size_t N>
class ArgBuffer {
 public:
  explicit ArgBuffer(size_t n) : p_(inline_) {
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
  T* p_;
};

void fill_output(array& out, double value, cuda::CUstream s) {
  auto dev = reinterpret_cast<cuda::CUdeviceptr>(out.raw_data());
  if (value == 0.0) {
    cuda::check(cuda_driver::api().cuMemsetD8Async(dev, 0, out.nbytes(), s), "metal_kernel", "cuMemsetD8Async");
    return;
  }
  // The value's bit pattern in the output dtype.
  std::vector<char> one(out.itemsize());
  convert_scalar(&value, Dtype::float64, one.data(), out.dtype());
  if (out.itemsize() == 4) {
    uint32_t bits;
    std::memcpy(&bits, one.data(), 4);
    cuda::check(cuda_driver::api().cuMemsetD32Async(dev, bits, out.size(), s), "metal_kernel", "cuMemsetD32Async");
    return;
  }
  std::vector<char> host(out.nbytes());
  for (size_t i = 0; i < out.size(); ++i) std::memcpy(host.data() + i * one.size(), one.data(), one.size());
  cuda::check(cuda_driver::api().cuMemcpyHtoD(dev, host.data(), host.size()), "metal_kernel", "cuMemcpyHtoD");
}

}  // namespace

// The glue passes shapes and strides by value, in fixed-size arrays.
const Shape& CustomKernel::check_dims(const array& in, int index) const {
  if (in.ndim() > alloy_msl::cuda::kMaxKernelDims) {
    throw std::invalid_argument("[metal_kernel] kernel '" + user_name() + "': input " + std::to_string(index) +
                                " has " + std::to_string(in.ndim()) + " dimensions; kernels that read its shape or "
                                "strides on the GPU take at most " + std::to_string(alloy_msl::cuda::kMaxKernelDims) + ".");
  }
  return in.shape();
}

void CustomKernel::eval_gpu(const std::vector<array>& inputs_in, std::vector<array>& outputs) {
  const CudaBinary* bin = compiled_for(*this);
  cuda::CUstream cs = cached_stream(stream());

  // Copies of the inputs only when one must be made row-contiguous.
  const std::vector<array>* inputs_p = &inputs_in;
  std::vector<array> copied;
  if (ensure_row_contiguous()) {
    for (size_t i = 0; i < inputs_in.size(); ++i) {
      if (inputs_in[i].flags().row_contiguous) continue;
      if (copied.empty()) copied = inputs_in;
      copied[i] = cuda::row_contiguous(inputs_in[i], cs, "metal_kernel");
    }
    if (!copied.empty()) inputs_p = &copied;
  }
  const std::vector<array>& inputs = *inputs_p;
  for (auto& o : outputs) {
    o.set_data(allocator(Device(Device::gpu)).malloc(o.nbytes()));
    if (init_value()) fill_output(o, *init_value(), cs);
  }

  // Kernel arguments in the glue's order: 8-byte slots for pointers and ints,
  // shapes and strides by value (the glue reads them as __grid_constant__).
  const auto& params = variant().translated.params;
  size_t n_meta = 0;  // shape and strides parameters
  for (const auto& p : params)
    n_meta += p.kind == msl::GlueParam::Shape || p.kind == msl::GlueParam::Strides;
  ArgBuffer<uint64_t, 16> slots(params.size() + 1);
  ArgBuffer<void*, 16> args(params.size() + 1);
  ArgBuffer<alloy_msl::cuda::ShapeArg, 2> shape_args(n_meta);
  ArgBuffer<alloy_msl::cuda::StridesArg, 2> stride_args(n_meta);
  size_t meta = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& p = params[i];
    uint64_t value = 0;
    switch (p.kind) {
      case msl::GlueParam::Buffer:
      case msl::GlueParam::Scalar: {
        bool is_input = p.index < static_cast<int>(inputs.size());
        const array& a = is_input ? inputs[p.index] : outputs[p.index - inputs.size()];
        value = reinterpret_cast<uint64_t>(a.raw_data());
        break;
      }
      case msl::GlueParam::Shape: {
        const Shape& s = check_dims(inputs[p.index], p.index);
        alloy_msl::cuda::ShapeArg& arg = shape_args[meta++];
        arg = {};
        std::copy(s.begin(), s.end(), arg.v);
        args[i] = &arg;
        continue;
      }
      case msl::GlueParam::Strides: {
        const Strides& s = inputs[p.index].strides();
        check_dims(inputs[p.index], p.index);
        alloy_msl::cuda::StridesArg& arg = stride_args[meta++];
        arg = {};
        std::copy(s.begin(), s.end(), arg.v);
        args[i] = &arg;
        continue;
      }
      case msl::GlueParam::Ndim: {
        int32_t nd = inputs[p.index].ndim();
        std::memcpy(&value, &nd, sizeof(nd));
        break;
      }
    }
    slots[i] = value;
    args[i] = &slots[i];
  }
  alloy_msl::cuda::Dispatch d{};
  unsigned blocks[3], block[3] = {1, 1, 1};
  for (int i = 0; i < 3; ++i) {
    d.grid[i] = grid()[i];
    d.threadgroup[i] = threadgroup()[i];
    blocks[i] = (grid()[i] + threadgroup()[i] - 1) / threadgroup()[i];
  }
  block[0] = threadgroup()[0] * threadgroup()[1] * threadgroup()[2];
  const unsigned per_block = msl::cuda_threadgroups_per_block(variant().translated.analysis);
  blocks[0] = (blocks[0] + per_block - 1) / per_block;
  args[params.size()] = &d;
  cuda_driver::launch(bin->fn, blocks, block, 0, cs, args.data());
  cuda::note_pending(stream());
}

}  // namespace alloy
