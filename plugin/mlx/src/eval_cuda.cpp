// MetalKernelPrimitive on MLX's CUDA backend: the kernel's CUDA translation
// (NVRTC, Alloy's caches) becomes a node of MLX's command encoder, so it is
// ordered with MLX's own kernels on MLX's stream and captured in its CUDA
// graphs. Built into liballoy_mlx_cuda.so, which needs the CUDA libmlx.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "backend/cuda/custom_kernel.h"
#include "core/env_switch.h"
#include "dtypes.h"
#include "mlx/backend/cuda/allocator.h"
#include "mlx/backend/cuda/device.h"
#include "mlx/backend/cuda/utils.h"
#include "primitive.h"
#include "private_symbol.h"

namespace mxc = ::mlx::core;

namespace {
// A kernel of at least this many threads runs long enough (tens of
// microseconds) to hide a graph launch behind it. ALLOY_MLX_COMMIT_THREADS
// overrides it (a tuning knob, docs/design/mlx-plugin.md).
unsigned long long commit_after_threads() {
  static const unsigned long long threads = alloy::env_count("ALLOY_MLX_COMMIT_THREADS", 1ull << 20);
  return threads;
}

// How a large kernel reaches MLX's stream. "graph" (ALLOY_MLX_LAUNCH=graph):
// as a node of MLX's graph, committed at once as a graph of its own. "direct"
// (the default): the nodes so far are committed and the kernel is launched on
// MLX's stream after them, as a kernel of MLX's own would be without graphs.
// A graph of one node costs its update and launch on the host and a gap
// between graphs on the GPU (docs/benchmarks.md, 2026-11-29).
bool launch_directly() {
  static const bool direct = [] {
    const char* v = std::getenv("ALLOY_MLX_LAUNCH");
    return !(v && std::string_view(v) == "graph");
  }();
  return direct;
}

// Outputs are allocated as MLX's own ops allocate theirs: cu::malloc_async
// gives device memory from the device's pool on MLX's stream, through MLX's
// buffer cache and its memory accounting. libmlx does not export it, so it
// is found in libmlx's symbol table (private_symbol.h). Without it (a libmlx
// without .symtab, or ALLOY_MLX_DEVICE_OUTPUTS=0) the exported
// allocator::malloc is used, which gives managed memory (cudaMallocManaged):
// a fresh buffer's pages then come to the GPU by page faults when a kernel
// first touches them (a 67 MB output cost the seed's grid_sample 4.3 ms,
// against 79 us once resident, H100), and a cached device buffer handed out
// for it is first copied into new managed memory by MLX, synchronously.
// The function's type as the installed MLX declares it (a Data in 0.32.4, a Buffer before).
using MlxMallocAsync = decltype(mxc::cu::malloc_async)*;

MlxMallocAsync mlx_malloc_async() {
  static const auto fn = alloy::switched_on("ALLOY_MLX_DEVICE_OUTPUTS")
                             ? reinterpret_cast<MlxMallocAsync>(alloy::mlx::find_private_symbol(
                                   reinterpret_cast<const void*>(&mxc::allocator::allocator), alloy::mlx::kMlxCudaMallocAsync))
                             : nullptr;
  return fn;
}

// MLX's encoder does not say whether graph nodes wait in it; its header
// (the installed MLX's, which this file is compiled against) declares the
// count private. An explicit instantiation may name a private member, so the
// member pointer is taken there (standard C++, no layout assumed).
template <auto Member, class Tag> struct PrivateMember {
  friend constexpr auto private_member(Tag) { return Member; }
};
struct NodeCount {
  friend constexpr auto private_member(NodeCount);
};
template struct PrivateMember<&mxc::cu::CommandEncoder::node_count_, NodeCount>;

int pending_nodes(mxc::cu::CommandEncoder& encoder) { return encoder.*private_member(NodeCount{}); }

// A large kernel launched directly must follow the graph nodes MLX holds,
// so the encoder commits them first. With none pending a commit would only
// hand MLX's kept inputs (add_temporary) to its completion worker: an event
// recorded on the stream between two kernels and a host callback, which
// left the GPU idle 3.8 us between consecutive direct launches (H100,
// scripts/probes/plugin_timeline.py). Those inputs then stay kept until a
// later commit (the eval's own, at the latest), so every
// ALLOY_MLX_IDLE_COMMIT_EVERY-th (16) direct launch commits anyway, bounding
// what is held; 1 commits before each, as before.
bool commit_before_direct_launch(mxc::cu::CommandEncoder& encoder) {
  static const unsigned long long every = std::max(alloy::env_count("ALLOY_MLX_IDLE_COMMIT_EVERY", 16), 1ull);
  thread_local unsigned long long skipped = 0;
  if (pending_nodes(encoder) > 0 || ++skipped >= every) {
    skipped = 0;
    return true;
  }
  return false;
}

void allocate_outputs(std::vector<mxc::array>& outputs, mxc::cu::CommandEncoder& encoder) {
  if (const auto malloc_async = mlx_malloc_async()) {
    for (auto& out : outputs) out.set_data(malloc_async(out.nbytes(), encoder));
  } else {
    for (auto& out : outputs) out.set_data(mxc::allocator::malloc(out.nbytes()));
  }
}

}  // namespace

extern "C" __attribute__((visibility("default"))) void alloy_mlx_eval_gpu(const alloy::fast::PreparedLaunch& launch,
                                                                          const mxc::Stream& stream,
                                                                          const std::vector<mxc::array>& inputs,
                                                                          std::vector<mxc::array>& outputs) {
  auto& encoder = mxc::cu::get_command_encoder(stream);
  // MLX runs on the device's primary context, which Alloy's driver calls use too.
  alloy::cuda::ensure_context();
  allocate_outputs(outputs, encoder);
  // data_size(): the elements each buffer holds, a bounds-checked kernel's limit.
  std::vector<alloy::cuda::KernelInput> views;
  views.reserve(inputs.size());
  for (auto& in : inputs) {
    views.push_back({mxc::gpu_ptr<void>(in), in.shape().data(), in.strides().data(), static_cast<int>(in.ndim()),
                     static_cast<unsigned long long>(in.data_size())});
  }
  std::vector<void*> outs;
  std::vector<unsigned long long> out_elements;
  outs.reserve(outputs.size());
  out_elements.reserve(outputs.size());
  for (auto& out : outputs) {
    outs.push_back(mxc::gpu_ptr<void>(out));
    out_elements.push_back(out.data_size());
  }
  alloy::cuda::CustomKernelLaunch l(launch, views.data(), views.size(), outs.data(), outs.size(), out_elements.data());
  // init_value: each output's fill, issued by `issue` (launched, or a graph node).
  auto fill_outputs = [&](auto&& issue) {
    if (!launch.init_value) return;
    for (auto& out : outputs) {
      alloy::cuda::FillLaunch fill(mxc::gpu_ptr<void>(out), out.size(), static_cast<unsigned>(out.itemsize()),
                                   alloy::cuda::fill_bits(*launch.init_value, alloy::mlx::to_alloy(out.dtype())));
      issue(out, fill);
    }
  };
  const unsigned long long threads = 1ull * l.blocks[0] * l.blocks[1] * l.blocks[2] * l.block[0] * l.block[1] *
                                     l.block[2];
  if (!l.bounds_checked() && threads >= commit_after_threads() && launch_directly()) {
    // The nodes before it go to the stream first; MLX's eval keeps the
    // inputs alive until the stream has passed a later commit (add_temporary).
    if (commit_before_direct_launch(encoder)) encoder.commit();
    const auto cs = reinterpret_cast<alloy::cuda_driver::CUstream>(static_cast<cudaStream_t>(encoder.stream()));
    fill_outputs([&](mxc::array&, alloy::cuda::FillLaunch& fill) {
      const unsigned grid[3] = {fill.blocks, 1, 1}, block[3] = {fill.block, 1, 1};
      alloy::cuda_driver::launch(fill.function, grid, block, 0, cs, fill.args());
    });
    alloy::cuda_driver::launch(l.function, l.blocks, l.block, l.shared_bytes, cs, l.args());
    return;
  }
  fill_outputs([&](mxc::array& out, alloy::cuda::FillLaunch& fill) {
    encoder.set_output_array(out);
    encoder.add_kernel_node_raw(reinterpret_cast<CUfunction>(fill.function), dim3(fill.blocks), dim3(fill.block),
                                dim3(), 0, fill.args());
  });
  if (l.bounds_checked()) {
    // The kernel's fault report, zeroed ahead of it in a graph of its own:
    // launched on the stream after the nodes so far, before the kernel's.
    // (A node depends only on the arrays registered just before it.)
    encoder.commit();
    alloy::cuda::FillLaunch zero(reinterpret_cast<void*>(l.bounds_report()), sizeof(alloy_msl::BoundsReport), 1, 0);
    encoder.add_kernel_node_raw(reinterpret_cast<CUfunction>(zero.function), dim3(zero.blocks), dim3(zero.block),
                                dim3(), 0, zero.args());
    encoder.commit();
  }
  for (auto& in : inputs) encoder.set_input_array(in);
  for (auto& out : outputs) {
    if (launch.init_value) encoder.set_input_array(out);  // after its fill
    encoder.set_output_array(out);
  }
  encoder.add_kernel_node_raw(reinterpret_cast<CUfunction>(l.function), dim3(l.blocks[0], l.blocks[1], l.blocks[2]),
                              dim3(l.block[0], l.block[1], l.block[2]), dim3(), l.shared_bytes, l.args());
  if (l.bounds_checked()) {
    // A bounds-checked kernel (a debugging mode) is run and waited for here,
    // as Alloy's own path does, so that a fault raises at this kernel's eval
    // with its own message rather than passing silently.
    encoder.commit();
    l.check_bounds(reinterpret_cast<alloy::cuda_driver::CUstream>(static_cast<cudaStream_t>(encoder.stream())));
    return;
  }
  // MLX gathers an eval's kernels into one CUDA graph and launches it when
  // the eval ends (or its own count says so): the GPU idles while the host
  // builds the rest. A small kernel waits in the graph for company (a graph
  // launch costs more than it); with ALLOY_MLX_LAUNCH=graph a large one is
  // committed with the graph so far, so the GPU runs it while the host
  // builds the next nodes (by default a large one was launched directly above).
  if (threads >= commit_after_threads()) encoder.commit();
}
