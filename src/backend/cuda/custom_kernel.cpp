// metal_kernel on the GPU: compile the CUDA translation with NVRTC once per
// variant, then launch it with dispatchThreads semantics (a 1-D block of
// prod(threadgroup) threads; the runtime derives Metal's ids inside).
#include "backend/cuda/custom_kernel.h"

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
#include "backend/cuda/fault.h"
#include "backend/cuda/graph_eval.h"
#include "backend/cuda/kernel_sources.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda/specialize.h"
#include "core/eval_profile.h"
#include "core/streams.h"
#include "fast/bounds_check.h"
#include "fast/cuda_build.h"
#include "fast/cuda_plan.h"
#include "fast/kernel_support.h"
#include "jit/cpu_interrupt.h"
#include "primitives/custom_kernel.h"

namespace alloy {

namespace {

struct CudaBinary {
  unsigned generation = 0;  // the context the module was loaded in
  cuda_driver::Module module;
  cuda_driver::CUfunction fn = nullptr;
  int static_shared = 0;  // bytes of __shared__ the kernel declares
  int max_threads = 0;    // threads a block may have with the registers it uses
  std::shared_ptr<const fast::CudaLaunchPlan> plan;
};

}  // namespace

namespace cuda {

std::shared_ptr<const fast::CudaLaunchPlan> launch_plan(fast::KernelVariant& v) {
  if (v.cuda_plan) return v.cuda_plan;
  fast::CudaBuild built;
  eval_profile::timed("(cubin: cache or NVRTC)", [&] {
    built = fast::build_for_cuda(v.spec, v.translated, cuda::kernel_arch(), fast::kernel_label(v));
  });
  auto plan = std::make_shared<fast::CudaLaunchPlan>();
  for (const msl::GlueParam& p : v.translated.params) plan->params.push_back({p.kind, p.index, {}});
  plan->threadgroups_per_block = msl::cuda_threadgroups_per_block(v.translated.analysis);
  plan->entry = built.entry;
  plan->dynamic_threadgroup = built.dynamic_threadgroup;
  plan->buffer_alignment = v.translated.analysis.assumed_buffer_alignment;
  plan->cubin = built.cubin;
  jit::Cache::global().put(fast::cuda_plan_key(v.spec, cuda::kernel_arch()), fast::encode_plan(*plan));
  return plan;
}

}  // namespace cuda

namespace {

// The variant's loaded kernel; it lives as long as the variant. After the
// first launch this is one acquire load (KernelVariant::ready).
const CudaBinary* compiled_for(fast::KernelVariant& v) {
  const unsigned generation = cuda::context_generation();
  if (void* ready = v.ready.load(std::memory_order_acquire)) {
    auto* bin = static_cast<const CudaBinary*>(ready);
    if (bin->generation == generation) return bin;
  }
  std::lock_guard<std::mutex> lock(v.compile_mutex);
  if (v.binary) {
    auto* old = static_cast<CudaBinary*>(v.binary.get());
    if (old->generation == generation) return old;
    // Loaded in a context a GPU fault destroyed: load it again (the old
    // module died with it; launches in flight may still read the object).
    old->module.forget();
    static auto* retired = new std::vector<std::shared_ptr<void>>();  // never freed, rare
    retired->push_back(std::move(v.binary));
    v.ready.store(nullptr, std::memory_order_release);
  }
  auto bin = std::make_shared<CudaBinary>();
  bin->generation = generation;
  bin->plan = cuda::launch_plan(v);
  cuda::ensure_context();
  eval_profile::timed("(cuModuleLoadData)", [&] { bin->module = cuda_driver::Module(bin->plan->cubin->data()); });
  if (v.spec.dialect == msl::Dialect::Metal) cuda::install_cancel_flag(bin->module.get());
  bin->fn = bin->module.function(bin->plan->entry.c_str());
  cuda::check(cuda_driver::api().cuFuncGetAttribute(&bin->static_shared, cuda_driver::kFuncSharedSizeBytes, bin->fn),
              "custom_kernel", "cuFuncGetAttribute(SHARED_SIZE_BYTES)");
  cuda::check(cuda_driver::api().cuFuncGetAttribute(&bin->max_threads, cuda_driver::kFuncMaxThreadsPerBlock, bin->fn),
              "custom_kernel", "cuFuncGetAttribute(MAX_THREADS_PER_BLOCK)");
  v.binary = bin;
  v.ready.store(bin.get(), std::memory_order_release);
  return bin.get();
}

// A Metal kernel in a threadgroup of `threads`: Metal runs any kernel with up
// to 1024 threads a threadgroup, but a CUDA build that uses many registers
// allows fewer threads a block. Such a launch takes the variant built with
// __launch_bounds__(1024) (the compiler then fits the registers, spilling if
// it must), made the first time one is needed.
const CudaBinary* compiled_for_threads(fast::KernelVariant& v, unsigned threads) {
  const CudaBinary* bin = compiled_for(v);
  if (v.spec.dialect != msl::Dialect::Metal || threads <= static_cast<unsigned>(bin->max_threads)) return bin;
  fast::KernelVariant* bounded = v.bounded_ready.load(std::memory_order_acquire);
  if (!bounded) {
    std::lock_guard<std::mutex> lock(v.compile_mutex);
    if (!v.bounded) {
      auto b = std::make_shared<fast::KernelVariant>();
      b->spec = v.spec;
      b->spec.cuda_launch_bound = 1024;
      fast::translate_variant(*b, msl::Target::Cuda);  // its plan from the cache when an earlier process built it
      v.bounded = std::move(b);
      v.bounded_ready.store(v.bounded.get(), std::memory_order_release);
    }
    bounded = v.bounded.get();
  }
  bin = compiled_for(*bounded);
  if (threads > static_cast<unsigned>(bin->max_threads)) {
    throw std::invalid_argument(fast::kernel_label(v) + ": a threadgroup of " + std::to_string(threads) +
                                " threads is more than this kernel can run on the GPU (" +
                                std::to_string(bin->max_threads) + " with the registers it needs).");
  }
  return bin;
}

// The CUDA stream behind an Alloy stream, remembered per thread: the
// backend's map (behind a mutex) never drops a stream, so a thread that
// looked one up (and so made the context current) can keep it.
cuda::CUstream cached_stream(const Stream& s) {
  if (cuda::t_capture_stream) return cuda::t_capture_stream;  // recording a tape (graph_eval.cpp)
  thread_local int index = -1;
  thread_local unsigned generation = 0;
  thread_local cuda::CUstream cs = nullptr;
  if (s.index != index || generation != cuda::context_generation()) {
    generation = cuda::context_generation();
    cs = cuda::stream_for(s);
    index = s.index;
  }
  return cs;
}

// Static shared memory plus the dynamic part (a CUDA body's shared_memory,
// or a Metal body's threadgroup arrays over 48 KB) must fit the device's
// per-block limit (opt-in, 227 KB on H100): say so before CUDA refuses the
// launch with a bare "invalid value". Above 48 KB the function must also be
// allowed the larger dynamic size, before a launch or a graph node uses it.
void prepare_shared_memory(const fast::KernelVariant& v, const CudaBinary& bin, unsigned dynamic) {
  if (dynamic <= 48u * 1024u) return;
  static const int limit = cuda_driver::device_attribute(cuda_driver::kMaxSharedMemoryPerBlockOptin);
  if (static_cast<long>(dynamic) + bin.static_shared > limit) {
    std::string what = v.spec.dialect == msl::Dialect::Cuda
                           ? "shared_memory=" + std::to_string(dynamic) + " bytes"
                           : std::to_string(dynamic) + " bytes of threadgroup memory";
    throw std::invalid_argument(fast::kernel_label(v) + ": " + what +
                                (bin.static_shared ? " plus " + std::to_string(bin.static_shared) +
                                                         " of static shared memory" : std::string()) +
                                " exceeds the device's " + std::to_string(limit) + " bytes per block.");
  }
  cuda::check(cuda_driver::api().cuFuncSetAttribute(bin.fn, cuda_driver::kFuncMaxDynamicSharedSizeBytes,
                                                    static_cast<int>(dynamic)),
              "custom_kernel", "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
}

// The glue passes shapes and strides by value, in fixed-size arrays.
void check_dims(const fast::KernelVariant& v, const cuda::KernelInput& in, int index) {
  if (in.ndim > alloy_msl::cuda::kMaxKernelDims) {
    throw std::invalid_argument(fast::kernel_label(v) + ": input " + std::to_string(index) + " has " +
                                std::to_string(in.ndim) + " dimensions; kernels that read its shape or "
                                "strides on the GPU take at most " +
                                std::to_string(alloy_msl::cuda::kMaxKernelDims) + ".");
  }
}

}  // namespace

namespace cuda {

CustomKernelLaunch::CustomKernelLaunch(const fast::PreparedLaunch& p, const KernelInput* inputs, size_t n_inputs,
                                       void* const* outputs, size_t n_outputs,
                                       const unsigned long long* output_elements, const KernelInput* output_views)
    : variant_(p.variant.get()) {
  fast::KernelVariant& v = *p.variant;
  const unsigned threads = p.threadgroup[0] * p.threadgroup[1] * p.threadgroup[2];
  const CudaBinary* bin = compiled_for_threads(v, threads);
  // The build specialized to these inputs' layouts, once there is one
  // (backend/cuda/specialize.h): the same parameters, the layouts as constants.
  if (fast::KernelVariant* special = specialized_variant(v, *bin->plan, inputs, n_inputs)) {
    bin = compiled_for_threads(*special, threads);
  }
  function = bin->fn;

  // Kernel arguments in the glue's order: 8-byte slots for pointers and ints,
  // shapes and strides by value (the glue reads them as __grid_constant__).
  const auto& params = bin->plan->params;
  size_t n_meta = 0;  // shape and strides parameters
  for (const auto& q : params) n_meta += q.kind == msl::GlueParam::Shape || q.kind == msl::GlueParam::Strides;
  // A bounds-checked kernel takes its buffers' sizes and a report after them;
  // one that only tolerates its inputs' reads, their sizes alone.
  const size_t n_bounds = v.spec.bounds_check ? (v.spec.tolerate_input_reads ? 1 : 2) : 0;
  slots_.resize(params.size() + 1);
  args_.resize(params.size() + n_bounds + 1);
  shapes_.resize(n_meta);
  strides_.resize(n_meta);
  size_t meta = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& q = params[i];
    uint64_t value = 0;
    switch (q.kind) {
      case msl::GlueParam::Buffer:
      case msl::GlueParam::Scalar: {
        bool is_input = q.index < static_cast<int>(n_inputs);
        const void* data = is_input ? inputs[q.index].data : outputs[q.index - n_inputs];
        value = reinterpret_cast<uint64_t>(data);
        break;
      }
      case msl::GlueParam::Shape:
      case msl::GlueParam::Strides: {
        // By value, in the fixed-size arrays the glue reads; an output's
        // (a tensor parameter's) from its view.
        const bool of_input = q.index < static_cast<int>(n_inputs);
        if (!of_input && !output_views)
          throw std::logic_error(fast::kernel_label(v) + ": an output's shape is read but none was given");
        const KernelInput& in = of_input ? inputs[q.index] : output_views[q.index - n_inputs];
        check_dims(v, in, q.index);
        if (q.kind == msl::GlueParam::Shape) {
          args_[i] = &(shapes_[meta] = {});
          std::copy(in.shape, in.shape + in.ndim, shapes_[meta].v);
        } else {
          args_[i] = &(strides_[meta] = {});
          std::copy(in.strides, in.strides + in.ndim, strides_[meta].v);
        }
        ++meta;
        continue;
      }
      case msl::GlueParam::Ndim: {
        int32_t nd = inputs[q.index].ndim;
        std::memcpy(&value, &nd, sizeof(nd));
        break;
      }
    }
    slots_[i] = value;
    args_[i] = &slots_[i];
  }
  args_[params.size()] = nullptr;
  if (n_bounds) {
    if (n_inputs + n_outputs > static_cast<size_t>(alloy_msl::kMaxBoundsSlots)) {
      throw std::invalid_argument(fast::kernel_label(v) + ": bounds_check takes at most " +
                                  std::to_string(alloy_msl::kMaxBoundsSlots) + " inputs and outputs together.");
    }
    for (size_t i = 0; i < n_inputs; ++i) bounds_sizes_.v[i] = inputs[i].elements;
    for (size_t j = 0; j < n_outputs; ++j) bounds_sizes_.v[n_inputs + j] = output_elements ? output_elements[j] : ~0ull;
    // One report per host thread: a checked launch is waited for before the
    // thread launches again (check_bounds). A kernel that only tolerates
    // reads of its inputs reports nothing: a null report, and the launch is
    // like any other (bounds_checked() false).
    if (!v.spec.tolerate_input_reads) {
      thread_local cuda_driver::CUdeviceptr report = 0;
      thread_local unsigned report_generation = 0;
      if (report_generation != cuda::context_generation()) report = 0;  // died with its context
      if (!report) {
        report_generation = cuda::context_generation();
        cuda::check(cuda_driver::api().cuMemAlloc(&report, sizeof(alloy_msl::BoundsReport)), "metal_kernel",
                    "cuMemAlloc (bounds report)");
      }
      bounds_report_ = reinterpret_cast<alloy_msl::BoundsReport*>(report);
    }
    args_[params.size()] = &bounds_sizes_;
    if (n_bounds == 2) args_[params.size() + 1] = &bounds_report_;
  }
  const size_t dispatch_arg = params.size() + n_bounds;

  if (v.spec.dialect == msl::Dialect::Cuda) {
    // A CUDA body: CUDA's own geometry, blocks = ceil(grid / threadgroup) of
    // exactly `threadgroup` threads, with the dynamic shared memory it asked for.
    for (int i = 0; i < 3; ++i) {
      block[i] = p.threadgroup[i];
      blocks[i] = (p.grid[i] + block[i] - 1) / block[i];
    }
    shared_bytes = p.shared_memory;
    prepare_shared_memory(v, *bin, shared_bytes);
    return;
  }
  // A Metal body: dispatchThreads(grid, threadgroup) as a 1-D block of
  // prod(threadgroup) threads; the glue derives Metal's ids from the Dispatch
  // passed after the parameters.
  alloy_msl::cuda::Dispatch& d = dispatch_;
  for (int i = 0; i < 3; ++i) {
    d.grid[i] = p.grid[i];
    d.threadgroup[i] = p.threadgroup[i];
    blocks[i] = (p.grid[i] + p.threadgroup[i] - 1) / p.threadgroup[i];
  }
  block[0] = p.threadgroup[0] * p.threadgroup[1] * p.threadgroup[2];
  const unsigned tgx = p.threadgroup[0];
  d.x_shift = 0;
  if (p.threadgroup[1] != 1u && p.threadgroup[2] == 1u && (tgx & (tgx - 1u)) == 0u) {
    unsigned log2 = 0;
    while ((1u << log2) < tgx) ++log2;
    d.x_shift = log2 + 1u;
  }
  const unsigned per_block = static_cast<unsigned>(bin->plan->threadgroups_per_block);
  blocks[0] = (blocks[0] + per_block - 1) / per_block;
  if (blocks[1] > alloy_msl::cuda::kMaxBlocksYZ || blocks[2] > alloy_msl::cuda::kMaxBlocksYZ) {
    // Fold (y, z) into one range over gridDim.y x gridDim.z; the glue unfolds it.
    const uint64_t yz = uint64_t(blocks[1]) * blocks[2];
    const uint64_t rows = (yz + alloy_msl::cuda::kMaxBlocksYZ - 1) / alloy_msl::cuda::kMaxBlocksYZ;
    if (rows > alloy_msl::cuda::kMaxBlocksYZ) {
      throw std::invalid_argument(fast::kernel_label(v) + ": the grid has " + std::to_string(yz) +
                                  " threadgroups in y and z together; the GPU runs at most " +
                                  std::to_string(uint64_t(alloy_msl::cuda::kMaxBlocksYZ) * alloy_msl::cuda::kMaxBlocksYZ) + ".");
    }
    d.fold_y = blocks[1];
    blocks[1] = alloy_msl::cuda::kMaxBlocksYZ;
    blocks[2] = static_cast<unsigned>(rows);
  }
  const unsigned groups_x = (p.grid[0] + p.threadgroup[0] - 1) / p.threadgroup[0];
  d.whole = d.fold_y == 0u && groups_x % per_block == 0u && p.grid[0] % p.threadgroup[0] == 0u &&
            p.grid[1] % p.threadgroup[1] == 0u && p.grid[2] % p.threadgroup[2] == 0u;
  args_[dispatch_arg] = &d;
  shared_bytes = bin->plan->dynamic_threadgroup;
  prepare_shared_memory(v, *bin, shared_bytes);
}

void CustomKernelLaunch::check_bounds(CUstream s) const {
  if (!bounds_report_) return;
  // Waited for first, as every wait on user kernels is, so that Ctrl-C and
  // alarms stop it: a copy into pageable memory would block in the driver
  // until the kernel ended, signals or not.
  cuda::wait_stoppable(s, 0, fast::kernel_label(*variant_));
  alloy_msl::BoundsReport r{};
  cuda::check(cuda_driver::api().cuMemcpyDtoHAsync(&r, reinterpret_cast<cuda_driver::CUdeviceptr>(bounds_report_),
                                                   sizeof(r), s),
              "metal_kernel", "cuMemcpyDtoHAsync (bounds report)");
  cuda::check(cuda_driver::api().cuStreamSynchronize(s), "metal_kernel", "cuStreamSynchronize (bounds report)");
  if (r.faulted) fast::throw_bounds_fault(*variant_, r);
}

void run_encoded(const fast::PreparedLaunch& p, const std::vector<void*>& inputs, const std::vector<void*>& outputs,
                 const Stream& s) {
  ArgBuffer<KernelInput, 8> views;
  views.resize(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) views[i] = {inputs[i], nullptr, nullptr, 0};
  CustomKernelLaunch l(p, views.data(), inputs.size(), outputs.data(), outputs.size());
  const uint64_t number = note_custom_launch(p.variant);
  cuda_driver::launch(l.function, l.blocks, l.block, l.shared_bytes, cached_stream(s), l.args());
  note_launched(number, cached_stream(s));
  note_pending(s);
}

uint64_t fill_bits(double value, Dtype d) {
  uint64_t bits = 0;
  char one[16];
  convert_scalar(&value, Dtype::float64, one, d);
  std::memcpy(&bits, one, size_of(d) < sizeof(bits) ? size_of(d) : sizeof(bits));
  return bits;
}

FillLaunch::FillLaunch(void* data, size_t n, unsigned width, uint64_t bits)
    : data_(reinterpret_cast<uint64_t>(data)), n_(n), bits_(bits), width_(width) {
  function = kernel("custom_kernel/fill", "alloy_fill_bits", [](const std::string&) { return fill_bits_source(); });
  block = kBlock;
  blocks = grid_blocks(static_cast<int64_t>(n), kBlock);
  args_[0] = &data_;
  args_[1] = &n_;
  args_[2] = &bits_;
  args_[3] = &width_;
}

}  // namespace cuda

void CustomKernel::eval_gpu(const std::vector<array>& inputs_in, std::vector<array>& outputs) {
  // A kernel not compiled yet may compile past the alarm meant to stop it:
  // a signal from here on stops it before its launch (jit/cpu_interrupt.h).
  jit::InterruptWindow window(variant().ready.load(std::memory_order_acquire) == nullptr);
  cuda::CUstream cs = cached_stream(stream());

  // Copies of the inputs only where input_needs_copy says.
  const std::vector<array>* inputs_p = &inputs_in;
  std::vector<array> copied;
  for (size_t i = 0; i < inputs_in.size(); ++i) {
    if (!input_needs_copy(inputs_in[i], i)) continue;
    if (copied.empty()) copied = inputs_in;
    copied[i] = cuda::copy_row_contiguous(inputs_in[i], cs, "metal_kernel");
  }
  if (!copied.empty()) inputs_p = &copied;
  const std::vector<array>& inputs = *inputs_p;
  const std::vector<int>& from = launch().output_from_input;
  for (size_t j = 0; j < outputs.size(); ++j) {
    array& o = outputs[j];
    o.set_data(allocator(Device(Device::gpu)).malloc(o.nbytes()));
    if (init_value()) {
      cuda::FillLaunch fill(o.raw_data(), o.size(), static_cast<unsigned>(o.itemsize()),
                            cuda::fill_bits(*init_value(), o.dtype()));
      const unsigned g[3] = {fill.blocks, 1, 1}, b[3] = {fill.block, 1, 1};
      cuda_driver::launch(fill.function, g, b, 0, cs, fill.args());
    }
    if (j < from.size() && from[j] >= 0 && o.nbytes() > 0) {
      cuda::check(cuda_driver::api().cuMemcpyDtoDAsync(reinterpret_cast<cuda_driver::CUdeviceptr>(o.raw_data()),
                                                       reinterpret_cast<cuda_driver::CUdeviceptr>(
                                                           inputs[from[j]].raw_data()),
                                                       o.nbytes(), cs),
                  "metal_library", "cuMemcpyDtoDAsync (in-out buffer)");
    }
  }

  const size_t n_kernel_inputs = inputs.size() - in_out_sources(launch());
  cuda::ArgBuffer<cuda::KernelInput, 8> views;
  views.resize(n_kernel_inputs);
  cuda::ArgBuffer<void*, 8> outs;
  outs.resize(outputs.size());
  cuda::ArgBuffer<unsigned long long, 8> out_elements;
  out_elements.resize(outputs.size());
  cuda::ArgBuffer<cuda::KernelInput, 8> out_views;
  out_views.resize(outputs.size());
  for (size_t i = 0; i < n_kernel_inputs; ++i) {
    const array& in = inputs[i];
    views[i] = {in.raw_data(), in.shape().data(), in.strides().data(), static_cast<int>(in.ndim()), in.data_size()};
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const array& o = outputs[i];
    outs[i] = o.raw_data();
    out_elements[i] = o.size();
    out_views[i] = {o.raw_data(), o.shape().data(), o.strides().data(), static_cast<int>(o.ndim()), o.size()};
  }
  cuda::CustomKernelLaunch l(launch(), views.data(), n_kernel_inputs, outs.data(), outputs.size(),
                             out_elements.data(), out_views.data());
  if (l.bounds_checked()) {
    // Zeroed on the stream, ahead of the launch that may write it.
    cuda::check(cuda_driver::api().cuMemsetD8Async(l.bounds_report(), 0, sizeof(alloy_msl::BoundsReport), cs),
                "metal_kernel", "cuMemsetD8Async (bounds report)");
  }
  cuda::stop_if_interrupted(window, fast::kernel_label(variant()));
  const uint64_t number = cuda::note_custom_launch(launch().variant);
  eval_profile::timed("(cuLaunchKernel)",
                      [&] { cuda_driver::launch(l.function, l.blocks, l.block, l.shared_bytes, cs, l.args()); });
  cuda::note_launched(number, cs);
  cuda::note_pending(stream());
  // timeout=: this launch is waited for here, and stopped at the deadline.
  if (launch().timeout > 0) cuda::wait_stoppable(cs, launch().timeout, fast::kernel_label(variant()));
  l.check_bounds(cs);
}

}  // namespace alloy
