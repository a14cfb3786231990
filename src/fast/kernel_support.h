// What metal_kernel, cuda_kernel and metal_library share in the fast layer:
// the process-wide variant cache, the CUDA translation check of CPU runs, the
// launch limits and the timeout rule.
#pragma once

#include <array>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>

#include "alloy/msl/translate.h"
#include "fast/kernel_cache.h"
#include "msl/runtime/cuda_launch.h"

namespace alloy::fast {

// Metal's (and CUDA's) limit on the threads of one threadgroup.
inline constexpr unsigned kMaxThreadsPerThreadgroup = 1024;
// CUDA's block limits, per dimension (its grid limit in y and z is
// alloy_msl::cuda::kMaxBlocksYZ).
inline constexpr int kMaxBlockDims[3] = {1024, 1024, 64};

inline std::string dims_to_string(const std::tuple<int, int, int>& d) {
  return "(" + std::to_string(std::get<0>(d)) + ", " + std::to_string(std::get<1>(d)) + ", " +
         std::to_string(std::get<2>(d)) + ")";
}

// The block a launch of MLX's geometry (grid in threads, threadgroup) runs
// with, after checking both: every dimension positive, at most 1024 threads;
// for a CUDA block (cuda_kernel, precompiled_cuda_kernel) CUDA's per-axis
// limits too, and the block is exactly what was asked (the code reads
// blockDim); a Metal threadgroup is clamped to the grid, as Metal does.
// `label()` starts every error ("[cuda_kernel] kernel 'k': "); it is built
// only when a check fails.
template <class Label>
std::array<unsigned, 3> checked_threadgroup(const Label& label, const std::tuple<int, int, int>& grid,
                                            const std::tuple<int, int, int>& threadgroup, bool cuda_block) {
  const std::array<int, 3> g{std::get<0>(grid), std::get<1>(grid), std::get<2>(grid)};
  const std::array<int, 3> t{std::get<0>(threadgroup), std::get<1>(threadgroup), std::get<2>(threadgroup)};
  for (int i = 0; i < 3; ++i) {
    if (g[i] <= 0) throw std::invalid_argument(label() + "grid " + dims_to_string(grid) + " must be positive in every dimension.");
    if (t[i] <= 0) {
      throw std::invalid_argument(label() + "threadgroup " + dims_to_string(threadgroup) +
                                  " must be positive in every dimension.");
    }
  }
  const size_t threads = static_cast<size_t>(t[0]) * t[1] * t[2];
  if (threads > kMaxThreadsPerThreadgroup) {
    throw std::invalid_argument(label() + "threadgroup " + dims_to_string(threadgroup) + " has " +
                                std::to_string(threads) + " threads; the limit is " +
                                std::to_string(kMaxThreadsPerThreadgroup) + ".");
  }
  std::array<unsigned, 3> tg;
  static const char* const axis[3] = {"x", "y", "z"};
  for (int i = 0; i < 3; ++i) {
    tg[i] = static_cast<unsigned>(cuda_block ? t[i] : std::min(t[i], g[i]));
    if (!cuda_block) continue;
    if (t[i] > kMaxBlockDims[i]) {
      throw std::invalid_argument(label() + "threadgroup " + dims_to_string(threadgroup) + " exceeds CUDA's " +
                                  std::to_string(kMaxBlockDims[i]) + " threads in " + axis[i] + ".");
    }
    const long blocks = (static_cast<long>(g[i]) + t[i] - 1) / t[i];
    if (i > 0 && blocks > alloy_msl::cuda::kMaxBlocksYZ) {
      throw std::invalid_argument(label() + "grid " + dims_to_string(grid) + " needs " + std::to_string(blocks) +
                                  " blocks in " + axis[i] + "; CUDA allows " +
                                  std::to_string(alloy_msl::cuda::kMaxBlocksYZ) + ".");
    }
  }
  return tg;
}

// Variants by the whole definition and the per-call key: a kernel object
// rebuilt on every call still translates and compiles once per process.
KernelVariantCache& variant_cache();

// With ALLOY_CHECK_CUDA=1 (the test suite sets it), a kernel run on the CPU
// is also translated for CUDA and compiled by NVRTC for sm_90, so machines
// without a GPU still catch CUDA translation errors of every kernel they run.
void check_cuda_translation(const msl::KernelSpec& spec);

// Fills a new variant from its spec: for CUDA, the launch plan an earlier
// process stored (no translation needed), else the translation for
// `target`. Front-end errors surface here, at the call.
void translate_variant(KernelVariant& v, msl::Target target);

// $ALLOY_CPU_SYNC: how the CPU runs synchronising kernels
// (msl::KernelSpec::cpu_sync): unset or "auto" (regions where the kernel
// allows, else coroutines, else fibers), "coroutines" or "fibers". Read at
// each launch, so a program (or a test) may switch; variant keys carry it.
msl::KernelSpec::CpuSync cpu_sync_requested();
// The variant key's device letter: 'g' for the GPU; for the CPU one per mode.
char cpu_sync_key(msl::Target target);

// The seconds a launch may run: `requested`, else $ALLOY_KERNEL_TIMEOUT; 0
// for no limit. A non-positive value is an error naming `label`. On the GPU
// a Metal kernel's loops poll the cancellation flag (backend/cuda/cancel.cpp);
// `gpu_unpolled` (a CUDA body, which has no polls) refuses a timeout=.
double launch_timeout(const std::optional<double>& requested, bool gpu_unpolled, const std::string& label);

}  // namespace alloy::fast
