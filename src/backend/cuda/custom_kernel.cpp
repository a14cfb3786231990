// metal_kernel on the GPU: compile the CUDA translation with NVRTC once per
// variant, then launch it with dispatchThreads semantics (a 1-D block of
// prod(threadgroup) threads; the runtime derives Metal's ids inside).
#include <cstring>
#include <string>
#include <mutex>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "alloy/allocator.h"
#include "alloy/ops.h"
#include "backend/cuda/device.h"
#include "backend/cuda/elementwise.h"
#include "core/eval_profile.h"
#include "core/streams.h"
#include "fast/cuda_build.h"
#include "fast/cuda_plan.h"
#include "msl/runtime/cuda_launch.h"
#include "primitives/custom_kernel.h"

namespace alloy {

namespace {

struct CudaBinary {
  cuda_driver::Module module;
  cuda_driver::CUfunction fn = nullptr;
  int static_shared = 0;  // bytes of __shared__ the kernel declares
  std::shared_ptr<const fast::CudaLaunchPlan> plan;
};

// The variant's launch plan: the one found on disk at lookup, else built
// from its translation (and stored for later processes).
std::shared_ptr<const fast::CudaLaunchPlan> plan_for(CustomKernel& k) {
  fast::KernelVariant& v = k.variant();
  if (v.cuda_plan) return v.cuda_plan;
  fast::CudaBuild built;
  eval_profile::timed("(cubin: cache or NVRTC)", [&] {
    built = fast::build_for_cuda(v.spec, v.translated, cuda::device_arch(), k.label());
  });
  auto plan = std::make_shared<fast::CudaLaunchPlan>();
  for (const msl::GlueParam& p : v.translated.params) plan->params.push_back({p.kind, p.index, {}});
  plan->threadgroups_per_block = msl::cuda_threadgroups_per_block(v.translated.analysis);
  plan->entry = built.entry;
  plan->dynamic_threadgroup = built.dynamic_threadgroup;
  plan->cubin = built.cubin;
  jit::Cache::global().put(fast::cuda_plan_key(v.spec, cuda::device_arch()), fast::encode_plan(*plan));
  return plan;
}

// The variant's loaded kernel; it lives as long as the variant. After the
// first launch this is one acquire load (KernelVariant::ready).
const CudaBinary* compiled_for(CustomKernel& k) {
  fast::KernelVariant& v = k.variant();
  if (void* ready = v.ready.load(std::memory_order_acquire)) return static_cast<const CudaBinary*>(ready);
  std::lock_guard<std::mutex> lock(v.compile_mutex);
  if (v.binary) return static_cast<const CudaBinary*>(v.binary.get());
  auto bin = std::make_shared<CudaBinary>();
  bin->plan = plan_for(k);
  cuda::ensure_context();
  eval_profile::timed("(cuModuleLoadData)", [&] { bin->module = cuda_driver::Module(bin->plan->cubin->data()); });
  bin->fn = bin->module.function(bin->plan->entry.c_str());
  cuda::check(cuda_driver::api().cuFuncGetAttribute(&bin->static_shared, cuda_driver::kFuncSharedSizeBytes, bin->fn),
              "custom_kernel", "cuFuncGetAttribute(SHARED_SIZE_BYTES)");
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

// Static shared memory plus the dynamic part (a CUDA body's shared_memory,
// or a Metal body's threadgroup arrays over 48 KB) must fit the device's
// per-block limit (opt-in, 227 KB on H100): say so before CUDA refuses the
// launch with a bare "invalid value".
void check_shared_memory(const CustomKernel& k, const CudaBinary& bin, unsigned dynamic) {
  if (dynamic <= 48u * 1024u) return;
  static const int limit = cuda_driver::device_attribute(cuda_driver::kMaxSharedMemoryPerBlockOptin);
  if (static_cast<long>(dynamic) + bin.static_shared > limit) {
    std::string what = k.variant().spec.dialect == msl::Dialect::Cuda
                           ? "shared_memory=" + std::to_string(dynamic) + " bytes"
                           : std::to_string(dynamic) + " bytes of threadgroup memory";
    throw std::invalid_argument(k.label() + ": " + what +
                                (bin.static_shared ? " plus " + std::to_string(bin.static_shared) +
                                                         " of static shared memory" : std::string()) +
                                " exceeds the device's " + std::to_string(limit) + " bytes per block.");
  }
}

// A CUDA body: CUDA's own geometry, blocks = ceil(grid / threadgroup) of
// exactly `threadgroup` threads, with the dynamic shared memory it asked for.
void launch_cuda_body(const CustomKernel& k, const CudaBinary& bin, void** args, cuda::CUstream cs) {
  unsigned blocks[3], block[3];
  for (int i = 0; i < 3; ++i) {
    block[i] = k.threadgroup()[i];
    blocks[i] = (k.grid()[i] + block[i] - 1) / block[i];
  }
  check_shared_memory(k, bin, k.shared_memory());
  eval_profile::timed("(cuLaunchKernel)", [&] { cuda_driver::launch(bin.fn, blocks, block, k.shared_memory(), cs, args); });
}

// A Metal body: dispatchThreads(grid, threadgroup) as a 1-D block of
// prod(threadgroup) threads; the glue derives Metal's ids from the Dispatch
// passed after the parameters.
void launch_metal_body(const CustomKernel& k, const CudaBinary& bin, ArgBuffer<void*, 16>& args, size_t n_params,
                       cuda::CUstream cs) {
  alloy_msl::cuda::Dispatch d{};
  unsigned blocks[3], block[3] = {1, 1, 1};
  for (int i = 0; i < 3; ++i) {
    d.grid[i] = k.grid()[i];
    d.threadgroup[i] = k.threadgroup()[i];
    blocks[i] = (k.grid()[i] + k.threadgroup()[i] - 1) / k.threadgroup()[i];
  }
  block[0] = k.threadgroup()[0] * k.threadgroup()[1] * k.threadgroup()[2];
  const unsigned per_block = static_cast<unsigned>(bin.plan->threadgroups_per_block);
  blocks[0] = (blocks[0] + per_block - 1) / per_block;
  if (blocks[1] > alloy_msl::cuda::kMaxBlocksYZ || blocks[2] > alloy_msl::cuda::kMaxBlocksYZ) {
    // Fold (y, z) into one range over gridDim.y x gridDim.z; the glue unfolds it.
    const uint64_t yz = uint64_t(blocks[1]) * blocks[2];
    const uint64_t rows = (yz + alloy_msl::cuda::kMaxBlocksYZ - 1) / alloy_msl::cuda::kMaxBlocksYZ;
    if (rows > alloy_msl::cuda::kMaxBlocksYZ) {
      throw std::invalid_argument(k.label() + ": the grid has " + std::to_string(yz) +
                                  " threadgroups in y and z together; the GPU runs at most " +
                                  std::to_string(uint64_t(alloy_msl::cuda::kMaxBlocksYZ) * alloy_msl::cuda::kMaxBlocksYZ) + ".");
    }
    d.fold_y = blocks[1];
    blocks[1] = alloy_msl::cuda::kMaxBlocksYZ;
    blocks[2] = static_cast<unsigned>(rows);
  }
  args[n_params] = &d;
  check_shared_memory(k, bin, bin.plan->dynamic_threadgroup);
  eval_profile::timed("(cuLaunchKernel)", [&] {
    cuda_driver::launch(bin.fn, blocks, block, bin.plan->dynamic_threadgroup, cs, args.data());
  });
}

}  // namespace

// The glue passes shapes and strides by value, in fixed-size arrays.
const Shape& CustomKernel::check_dims(const array& in, int index) const {
  if (in.ndim() > alloy_msl::cuda::kMaxKernelDims) {
    throw std::invalid_argument(label() + ": input " + std::to_string(index) +
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
  const auto& params = bin->plan->params;
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
  if (variant().spec.dialect == msl::Dialect::Cuda) {
    launch_cuda_body(*this, *bin, args.data(), cs);
  } else {
    launch_metal_body(*this, *bin, args, params.size(), cs);
  }
  cuda::note_pending(stream());
}

}  // namespace alloy
