// Per-kernel-object cache of translations and compiled binaries, keyed by
// what changes the generated code for one source (dtypes, template values,
// target). The disk/content cache underneath is alloy::jit's.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "alloy/msl/translate.h"

namespace alloy::fast {

struct CompiledKernel;  // backend-specific (a loaded shared object, a CUDA function)

struct CudaLaunchPlan;

struct KernelVariant {
  msl::KernelSpec spec;
  // Empty (no source) when a CUDA variant came with a launch plan from the
  // disk cache: it never needed translating.
  msl::TranslatedKernel translated;
  // CUDA target: the launch plan found on disk at lookup, if any.
  std::shared_ptr<const CudaLaunchPlan> cuda_plan;
  // Filled on first use by the backend that runs it (under compile_mutex);
  // `ready` then publishes binary.get() so later launches read it with one
  // acquire load instead of taking the mutex.
  std::mutex compile_mutex;
  std::shared_ptr<void> binary;
  std::atomic<void*> ready{nullptr};
  // CUDA target: the same kernel built for blocks of 1024 threads
  // (spec.cuda_launch_bound), made when a launch needs more threads than
  // this build's registers allow (under compile_mutex).
  std::shared_ptr<KernelVariant> bounded;
  std::atomic<KernelVariant*> bounded_ready{nullptr};  // bounded.get() once made: launches read it unlocked
  // CPU target: the same kernel bounds-checked (under compile_mutex), made
  // when a launch stopped with a memory fault, to rerun it. When the rerun's
  // only faults were reads of inputs out of bounds, `tolerant_ready`
  // publishes it and later launches run it, those reads giving element 0.
  std::shared_ptr<KernelVariant> checked;
  std::atomic<KernelVariant*> tolerant_ready{nullptr};
  // CUDA target: builds specialized to input layouts and the launches
  // counted toward them (backend/cuda/specialize.cpp; made under compile_mutex).
  std::shared_ptr<void> cuda_specialized;
};

class KernelVariantCache {
 public:
  template <typename Build>
  std::shared_ptr<KernelVariant> get(const std::string& key, Build&& build) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = variants_.find(key);
    if (it != variants_.end()) return it->second;
    auto v = build();
    variants_.emplace(key, v);
    return v;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<KernelVariant>> variants_;
};

}  // namespace alloy::fast
