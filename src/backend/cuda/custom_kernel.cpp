// metal_kernel on the GPU: compile the CUDA translation with NVRTC once per
// variant, then launch it with dispatchThreads semantics (a 1-D block of
// prod(threadgroup) threads; the runtime derives Metal's ids inside).
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

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

std::shared_ptr<CudaBinary> compiled_for(CustomKernel& k) {
  fast::KernelVariant& v = k.variant();
  std::lock_guard<std::mutex> lock(v.compile_mutex);
  if (v.binary) return std::static_pointer_cast<CudaBinary>(v.binary);
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
  return bin;
}

// Shapes and strides the kernel reads live in small device buffers, one per
// distinct content, kept for the life of the process (they are tiny, and a
// training loop reuses a handful).
class MetadataPool {
 public:
  void* get(const void* bytes, size_t size, cuda::CUstream stream) {
    std::string key(static_cast<const char*>(bytes), size);
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = buffers_.find(key);
    if (it != buffers_.end()) return it->second.ptr;
    if (buffers_.size() > 4096) buffers_.clear();  // freed blocks are reused only by later launches
    Buffer b = allocator(Device(Device::gpu)).malloc(std::max<size_t>(size, 1));
    cuda::check(cuda_driver::api().cuMemcpyHtoDAsync(reinterpret_cast<cuda::CUdeviceptr>(b.ptr), bytes, size, stream),
                "metal_kernel", "cuMemcpyHtoDAsync");
    buffers_.emplace(std::move(key), Owned(b));
    return b.ptr;
  }

 private:
  struct Owned {
    void* ptr;
    size_t size;
    explicit Owned(Buffer b) : ptr(b.ptr), size(b.size) {}
    Owned(Owned&& o) noexcept : ptr(o.ptr), size(o.size) { o.ptr = nullptr; }
    ~Owned() {
      if (ptr) allocator(Device(Device::gpu)).free(Buffer{ptr, size, Device(Device::gpu)});
    }
  };
  std::mutex mutex_;
  std::unordered_map<std::string, Owned> buffers_;
};

MetadataPool& metadata_pool() {
  static MetadataPool* p = new MetadataPool();
  return *p;
}

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

void CustomKernel::eval_gpu(const std::vector<array>& inputs_in, std::vector<array>& outputs) {
  auto bin = compiled_for(*this);
  cuda::CUstream cs = cuda::stream_for(stream());

  std::vector<array> inputs = inputs_in;
  if (ensure_row_contiguous()) {
    for (auto& in : inputs) {
      if (!in.flags().row_contiguous) in = cuda::row_contiguous(in, cs, "metal_kernel");
    }
  }
  for (auto& o : outputs) {
    o.set_data(allocator(Device(Device::gpu)).malloc(o.nbytes()));
    if (init_value()) fill_output(o, *init_value(), cs);
  }

  // Kernel arguments: one 8-byte slot per parameter, in the glue's order.
  const auto& params = variant().translated.params;
  std::vector<uint64_t> slots(params.size() + 1);
  std::vector<void*> args(params.size() + 1);
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
        const Shape& s = inputs[p.index].shape();
        value = reinterpret_cast<uint64_t>(metadata_pool().get(s.data(), s.size() * sizeof(int32_t), cs));
        break;
      }
      case msl::GlueParam::Strides: {
        const Strides& s = inputs[p.index].strides();
        value = reinterpret_cast<uint64_t>(metadata_pool().get(s.data(), s.size() * sizeof(int64_t), cs));
        break;
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
  args[params.size()] = &d;
  cuda_driver::launch(bin->fn, blocks, block, 0, cs, args.data());
  cuda::note_pending(stream());
}

}  // namespace alloy
